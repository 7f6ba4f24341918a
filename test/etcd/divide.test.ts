/**
 * Dividing a running split on a real etcd (substrate.md, "Dividing a running split"; decision
 * 0063), two members with an EtcdStore each:
 * - one large split on idle lanes is divided, in both layouts; every unit runs exactly once
 *   (no fault), residuals are claimed and completed as ordinary splits, the verdict covers them;
 * - a division whose fence is gone (the lease key deleted under the lane) lands nowhere: no
 *   residual, no end, `divide()` rejects with LEASE_LOST, the split stays whole and runs on elsewhere;
 * - a residual forged before its parent divides costs its own split only: the division does not
 *   land, the parent runs whole, every unit of it once;
 * - a sandboxed handler divides too (its callback runs in the worker thread).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { sandboxedHandler } from '../../src/coordinator/sandbox/sandbox.js';
import type { SplitHandle, SplitHandler } from '../../src/coordinator/types.js';
import { divisibleRange } from '../../src/divisible-range.js';
import { jobPrefix, leaseKey, progressKey, specKey, splitKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { defaultFingerprint } from '../../src/config.js';
import { readSplit } from '../../src/inspect/split-read.js';
import { renderSplit } from '../../src/inspect/splits.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

type Range = { from: number; to: number };

/** A handler over [from, to), `chunk` units per step of `stepMs`, counting each unit in `units`. */
function ranged(units: Map<number, number>, chunk = 50, stepMs = 5) {
  return async (split: SplitHandle) => {
    const range = divisibleRange(split);
    for (let run; (run = await range.next(chunk)); ) {
      await new Promise((r) => setTimeout(r, stepMs));
      for (let u = run.from; u < run.to; u++) units.set(u, (units.get(u) ?? 0) + 1);
      await range.commit();
    }
    await range.complete();
  };
}

/** Runs `splits` on two members of `lanes` lanes until both have a verdict. */
async function runJob(job: string, layout: 'keys' | 'packed', splits: ({ id: string } & Range)[], handler: SplitHandler, before?: (admin: EtcdStore, prefix: string, fp: string) => Promise<void>) {
  const admin = new EtcdStore({ endpoints: etcd.endpoint });
  const stores = [0, 1].map(() => new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 }));
  const coordinators: Coordinator[] = [];
  const divided: { id: string; residual: string }[] = [];
  const claimed = new Set<string>();
  const prefix = jobPrefix('splitfleet', job);
  const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
  try {
    await before?.(admin, prefix, fp);
    for (const [i, store] of stores.entries()) {
      coordinators.push(await startCoordinator({
        store, job, instance: `w${i}`, logger: silentLogger, maxInFlight: 2, layout,
        leaseDurationMs: 2000, opTimeoutMs: 1000, drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000,
        planner: () => ({ splits: splits.map((s) => ({ id: s.id, weight: s.to - s.from, descriptor: { from: s.from, to: s.to } })), final: true }),
        handler,
        on: {
          'split-divided': (e) => { divided.push({ id: e.id, residual: e.residual }); },
          'split-claimed': (e) => { claimed.add(e.id); },
        },
      }));
    }
    const verdicts = await Promise.all(coordinators.map((c) => c.done));
    return { verdicts, divided, claimed, admin, prefix, fp, job };
  } finally {
    await Promise.all(coordinators.map((c) => c.close().catch(() => undefined)));
    await Promise.all(stores.map((s) => s.close()));
  }
}

const every = (units: Map<number, number>, n: number) => {
  for (let u = 0; u < n; u++) expect(units.get(u), `unit ${u}`).toBe(1);
  expect(units.size).toBe(n);
};

describe.each(['keys', 'packed'] as const)('dividing a running split on etcd (%s)', (layout) => {
  it('one large split on four idle lanes: divided, every unit once, residuals run as splits, verdict complete', async () => {
    const units = new Map<number, number>();
    const r = await runJob(`divide-${layout}-${Date.now().toString(36)}`, layout, [{ id: 'big', from: 0, to: 8000 }], ranged(units));
    try {
      expect(r.verdicts).toEqual(['complete', 'complete']);
      every(units, 8000);
      expect(r.divided.length).toBeGreaterThanOrEqual(2);
      for (const d of r.divided) expect(r.claimed.has(d.residual), d.residual).toBe(true);
      // inspect --split: a residual names its parent (both layouts: residuals are never folded back);
      // a keys job's parent keeps its division record (a packed job folds its records away).
      const first = r.divided.find((d) => d.id === 'big')!;
      const residual = await readSplit({ store: r.admin, root: 'splitfleet', job: r.job, id: first.residual });
      expect(residual.split?.parent).toBe('big');
      expect(renderSplit(residual.page, residual.split!)).toMatch(/divided from +big/);
      if (layout === 'keys') {
        const parent = await readSplit({ store: r.admin, root: 'splitfleet', job: r.job, id: 'big' });
        expect(parent.split?.divided?.divisions).toBe(r.divided.filter((d) => d.id === 'big').length);
        expect(renderSplit(parent.page, parent.split!)).toMatch(/divided +\d+ times? \(residuals big÷1/);
      }
    } finally {
      await r.admin.close();
    }
  });
});

describe('division fences (etcd)', () => {
  it('a division whose lease key is gone lands nowhere: no residual, no end; the split runs whole elsewhere', async () => {
    const units = new Map<number, number>();
    let cut = false;
    let outcome: unknown;
    let admin: EtcdStore | undefined;
    let prefix = '';
    const handler = async (split: SplitHandle) => {
      const d = split.descriptor as Range;
      let pos = typeof split.progress === 'number' ? split.progress : d.from;
      split.onDivide(async (request) => {
        if (cut) return;
        cut = true;
        // The lane's lease key goes (an expiry, an operator) between the ask and the division.
        await admin!.delete(leaseKey(prefix, split.id));
        outcome = await request.divide({ end: pos + 100, residual: { descriptor: { from: pos + 100, to: d.to }, weight: d.to - pos - 100 } })
          .catch((e: { code?: string }) => e.code);
      });
      while (pos < d.to && !split.signal.aborted) {
        await new Promise((r) => setTimeout(r, 5));
        const to = Math.min(d.to, pos + 50);
        for (let u = pos; u < to; u++) units.set(u, (units.get(u) ?? 0) + 1);
        pos = to;
        await split.commit(pos).catch(() => undefined);
      }
      if (!split.signal.aborted) await split.complete(pos);
    };
    const r = await runJob(`divide-fence-${Date.now().toString(36)}`, 'keys', [{ id: 'big', from: 0, to: 3000 }], handler, async (a, p) => {
      admin = a;
      prefix = p;
    });
    try {
      expect(cut).toBe(true);
      // Not ours any more: divide() rejects (LEASE_LOST), so the handler stops rather than go on.
      expect(outcome).toBe('LEASE_LOST');
      expect(r.verdicts).toEqual(['complete', 'complete']);
      expect(r.divided).toEqual([]);
      expect(await r.admin.get(splitKey(r.prefix, 'big÷1'))).toBeUndefined();
      expect(await r.admin.get(specKey(r.prefix, 'big÷1'))).toBeUndefined();
      const progress = JSON.parse((await r.admin.get(progressKey(r.prefix, 'big')))!.value) as Record<string, unknown>;
      expect(progress.end).toBeUndefined();
      // At-least-once across the loss: nothing lost, the uncommitted tail at most replayed.
      for (let u = 0; u < 3000; u++) expect(units.get(u) ?? 0, `unit ${u}`).toBeGreaterThanOrEqual(1);
    } finally {
      await r.admin.close();
    }
  });

  it('a forged residual costs its own split only: the division does not land, the parent runs whole, each unit once', async () => {
    const units = new Map<number, number>();
    const r = await runJob(`divide-forged-${Date.now().toString(36)}`, 'keys', [{ id: 'big', from: 0, to: 4000 }], ranged(units), async (admin, prefix, fp) => {
      await admin.put(splitKey(prefix, 'big÷1'), encodeRecord('split', { v: SCHEMA_VERSION, fp, id: 'big÷1', epoch: 0, status: 'runnable', owner: '', attempts: 0 }));
    });
    try {
      // The forged record has no spec: parked (the verdict says stalled), never run; the parent's units all ran once.
      expect(r.verdicts).toEqual(['stalled', 'stalled']);
      every(units, 4000);
      expect(r.divided.every((d) => d.residual !== 'big÷1')).toBe(true);
      expect(r.claimed.has('big÷1')).toBe(false);
      expect(await r.admin.get(specKey(r.prefix, 'big÷1'))).toBeUndefined();
      const progress = JSON.parse((await r.admin.get(progressKey(r.prefix, 'big')))!.value) as Record<string, unknown>;
      expect(progress.divisions).toBeUndefined();
    } finally {
      await r.admin.close();
    }
  });

  it('a sandboxed handler divides: its callback runs in the thread, every unit once', async () => {
    const module = fileURLToPath(new URL('../fixtures/divisible-handler.mjs', import.meta.url));
    const handler = sandboxedHandler(module, { threads: 4 });
    try {
      // Long enough (about 4.8 s of work) that the leader's first round asks it while it runs, whatever the load (1.2 s was not, once, under CI load).
      const r = await runJob(`divide-sandbox-${Date.now().toString(36)}`, 'keys', [{ id: 'big', from: 0, to: 48000 }], handler);
      try {
        expect(r.verdicts).toEqual(['complete', 'complete']);
        expect(r.divided.length).toBeGreaterThanOrEqual(1);
        const seen = new Map<number, number>();
        for (const kv of (await r.admin.listAll(`${r.prefix}progress.`)).kvs) {
          // The fixture commits { at, ran: [from, to) runs } so the test can count units from the records.
          const p = (JSON.parse(kv.value) as { progress: { ran: [number, number][] } }).progress;
          for (const [a, b] of p.ran) for (let u = a; u < b; u++) seen.set(u, (seen.get(u) ?? 0) + 1);
        }
        every(seen, 48000);
      } finally {
        await r.admin.close();
      }
    } finally {
      await handler.close();
    }
  });
});
