/**
 * Snapshots of a job on the store, parsed (`readJob`), and the questions the
 * tests ask of one: who holds what (`heldBy`), is the fleet settled
 * (`isSettled`). Reads only; committed progress is merged into each split.
 */
import { parseKey } from '../../src/protocol/keys.js';
import type { Store } from '../../src/store/store.js';

export interface JobState {
  revision: number;
  plan: Record<string, any> | undefined;
  leader: { rec: Record<string, any>; modRevision: number; createRevision: number } | undefined;
  workers: Map<string, Record<string, any>>;
  /** Each split's record with its committed progress (`progress.{id}`, null before the first commit) as `progress`. */
  splits: Map<string, Record<string, any> & { modRevision: number }>;
  leases: Map<string, { owner: string; epoch: number; createRevision: number; lease?: string }>;
  assigns: Map<string, { splits: string[]; generation: number; modRevision: number }>;
}

/** Reads the whole job, parsed. */
export async function readJob(store: Store, prefix: string): Promise<JobState> {
  const { kvs, revision } = await store.listAll(prefix);
  const s: JobState = { revision, plan: undefined, leader: undefined, workers: new Map(), splits: new Map(), leases: new Map(), assigns: new Map() };
  const committed = new Map<string, unknown>();
  for (const kv of kvs) {
    const p = parseKey(prefix, kv.key);
    const rec = JSON.parse(kv.value) as Record<string, any>;
    switch (p.kind) {
      case 'plan':
        s.plan = rec;
        break;
      case 'leader':
        s.leader = { rec, modRevision: kv.modRevision, createRevision: kv.createRevision };
        break;
      case 'worker':
        s.workers.set(p.id, rec);
        break;
      case 'split':
        s.splits.set(p.id, { ...rec, progress: committed.get(p.id) ?? null, modRevision: kv.modRevision });
        break;
      case 'progress':
        committed.set(p.id, rec.progress); // progress.* lists before split.* (key order)
        break;
      case 'lease':
        s.leases.set(p.id, { owner: rec.owner, epoch: rec.epoch, createRevision: kv.createRevision, ...(kv.lease ? { lease: kv.lease } : {}) });
        break;
      case 'assign':
        s.assigns.set(p.id, { splits: rec.splits, generation: rec.generation, modRevision: kv.modRevision });
        break;
      default:
        break;
    }
  }
  return s;
}

/** Who each split is assigned to, by the published records. */
function assignedTo(s: JobState): Map<string, string> {
  const out = new Map<string, string>();
  for (const [instance, a] of s.assigns) for (const id of a.splits) out.set(id, instance);
  return out;
}

/** Split ids whose live lease key names `instance`. */
export function heldBy(s: JobState, instance: string): string[] {
  return [...s.leases].filter(([, l]) => l.owner === instance).map(([id]) => id).sort();
}

/**
 * Settled: every live member has a record, every runnable split is named in
 * exactly the record of a live member and held (lease key) by that member,
 * and no lease is held by anyone else. `members` are the instances expected live.
 */
export function isSettled(s: JobState, members: string[], expectedSplits: number): boolean {
  if (s.splits.size < expectedSplits) return false;
  for (const m of members) if (!s.workers.has(m) || !s.assigns.has(m)) return false;
  const to = assignedTo(s);
  for (const [id, rec] of s.splits) {
    if (rec.status !== 'runnable') continue;
    const who = to.get(id);
    if (who === undefined || !members.includes(who)) return false;
    if (s.leases.get(id)?.owner !== who) return false;
  }
  for (const [id, l] of s.leases) if (to.get(id) !== l.owner) return false;
  return true;
}
