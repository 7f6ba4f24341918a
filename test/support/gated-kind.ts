/**
 * A kind for `serve` tests whose splits wait for their job's gate: a job
 * stays joined (its lanes held) until the test opens it. `hold` plans `n`
 * splits of weight 1 (`params: { n }`).
 */
import type { ServedKind } from '../../src/coordinator/serve.js';

export interface GatedKind {
  readonly kind: ServedKind;
  /** Lets every split of `job` waiting so far complete. */
  open(job: string): void;
  /** Opens every job's gate. */
  openAll(): void;
}

export function gatedHoldKind(): GatedKind {
  const gates = new Map<string, () => void>();
  const kind: ServedKind = {
    planner: (p: { n: number }) => ({ final: true, splits: Array.from({ length: p.n }, (_, i) => ({ id: `s${i}`, weight: 1 })) }),
    handler: async (split, job) => {
      await new Promise<void>((r) => {
        const prev = gates.get(job.job);
        gates.set(job.job, () => {
          prev?.();
          r();
        });
      });
      await split.complete(1);
    },
  };
  return { kind, open: (job) => gates.get(job)?.(), openAll: () => { for (const g of gates.values()) g(); } };
}
