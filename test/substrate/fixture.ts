/**
 * What the substrate suite needs from a backend, and the helpers its tests
 * share: one job per test (its own name and prefix), coordinators that are
 * closed after the test, the split and progress keys' histories through a
 * prefix watch, a split's record read together with its `progress.{id}`,
 * decoded reads, and the claim transaction exactly as the worker sends it.
 *
 * The suite tests the substrate (claims, fencing, quarantine, completion,
 * leadership, refusals), not the assignment engine: coordinators here use the
 * reference assigner, so a change in flux in the WASM engine cannot fail it.
 */

import { expect } from 'vitest';
import { referenceAssignment } from '../../src/assignment/reference.js';
import { startCoordinator, type Coordinator, type CoordinatorOptions } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { Planner, SplitHandler } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { isSplitfleetError } from '../../src/errors.js';
import { classifyClaim, claimedRecord, initialSplitRecord } from '../../src/protocol/claims.js';
import { jobPrefix, leaseKey, parseKey, progressKey, specKey, splitKey } from '../../src/protocol/keys.js';
import {
  decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION, type Json, type ProgressRecord, type RecordKind, type RecordTypes,
  type SplitRecord,
} from '../../src/protocol/records.js';
import { cmp, op, type Store, type TxnResult, type WatchHandle } from '../../src/store/store.js';
import { waitUntil, type WaitOptions } from '../support/wait.js';

/** A backend under test. */
export interface SubstrateFixture {
  /** The test's own client: inspection and forged writes. */
  store: Store;
  /** A client for one coordinator (etcd: its own connection, as a separate process would have; memory: the shared store). */
  connect(): Promise<Store>;
  close(): Promise<void>;
}

/** Short leases keep the suite fast; rebalanceDelayMs 0 reassigns a departed instance's splits at once. */
export const FAST = {
  leaseDurationMs: 2000,
  opTimeoutMs: 1000,
  rebalanceDelayMs: 0,
  drainDeadlineMs: 1000,
  reconcileIntervalMs: 1000,
} as const;

const ROOT = 'splitfleet';
let jobCounter = 0;

/** One test's job: its name, prefix, fingerprint hash, and the coordinators it started. */
export class JobContext {
  readonly job: string;
  readonly prefix: string;
  readonly fp: string;
  readonly coordinators: Coordinator[] = [];
  private readonly watches: WatchHandle[] = [];

  constructor(readonly f: SubstrateFixture, backend: string, label: string) {
    this.job = `${backend}-${label}-${++jobCounter}-${Math.random().toString(36).slice(2, 7)}`;
    this.prefix = jobPrefix(ROOT, this.job);
    this.fp = fingerprintHash(defaultFingerprint(ROOT, this.job));
  }

  get store(): Store {
    return this.f.store;
  }

  /** Starts a coordinator of this job on its own client (`store` overrides); it is closed after the test. */
  async start(
    instance: string,
    planner: Planner,
    handler: SplitHandler,
    extra: Partial<CoordinatorOptions> = {},
  ): Promise<Coordinator> {
    const store = extra.store ?? (await this.f.connect());
    const c = await startCoordinator({
      job: this.job,
      instance,
      maxInFlight: 4,
      // The keys layout: this suite reads and writes split and spec records directly (a packed job's
      // queue has its own suites: test/integration/packed-*.test.ts, the packed simulation).
      layout: 'keys',
      ...FAST,
      assigner: async (input) => referenceAssignment(input),
      logger: silentLogger,
      ...extra,
      store,
      planner,
      handler,
    });
    this.coordinators.push(c);
    return c;
  }

  /** Decodes `kind` at `key` (undefined when missing). */
  async read<K extends RecordKind>(kind: K, key: string): Promise<RecordTypes[K] | undefined> {
    const kv = await this.store.get(key);
    return kv && decodeRecord(kind, key, kv.value, this.fp);
  }

  split(id: string): Promise<SplitRecord | undefined> {
    return this.read('split', splitKey(this.prefix, id));
  }

  /** Split `id`'s committed progress record (`progress.{id}`; undefined: nothing committed yet). */
  progress(id: string): Promise<ProgressRecord | undefined> {
    return this.read('progress', progressKey(this.prefix, id));
  }

  /**
   * Split `id`'s record with its committed progress beside it, read in one
   * transaction (one revision): what `split.{id}` alone held before progress
   * got a key of its own. `progress` is null when nothing was committed.
   */
  async state(id: string): Promise<(SplitRecord & { progress: Json; progressEpoch: number | undefined }) | undefined> {
    const sk = splitKey(this.prefix, id);
    const pk = progressKey(this.prefix, id);
    const res = await this.store.txn({ compares: [], success: [op.get(sk), op.get(pk)] });
    const [s, p] = res.reads;
    if (!s) return undefined;
    const progress = p ? decodeRecord('progress', pk, p.value, this.fp) : undefined;
    return { ...decodeRecord('split', sk, s.value, this.fp), progress: progress?.progress ?? null, progressEpoch: progress?.epoch };
  }

  /** Polls until `check` holds on split `id`'s record; returns that record. */
  waitSplit(what: string, id: string, check: (r: SplitRecord) => boolean, options: WaitOptions = {}): Promise<SplitRecord> {
    let last: SplitRecord | undefined;
    return waitUntil(`split ${id}: ${what}`, async () => {
      last = await this.split(id);
      return last !== undefined && check(last) ? last : undefined;
    }, { describe: () => JSON.stringify(last), ...options });
  }

  /** Every put of a split record under this job, from now on, decoded, in revision order. */
  async splitHistory(): Promise<{ revision: number; rec: SplitRecord }[]> {
    const history: { revision: number; rec: SplitRecord }[] = [];
    const h = this.store.watch(this.prefix, {
      onEvent: (e) => {
        const parsed = parseKey(this.prefix, e.key);
        if (e.type === 'put' && parsed.kind === 'split') {
          history.push({ revision: e.modRevision, rec: decodeRecord('split', e.key, e.value ?? '', this.fp) });
        }
      },
    });
    this.watches.push(h);
    await h.ready;
    return history;
  }

  /** Every put of a progress record under this job, from now on, decoded, in revision order. */
  async progressHistory(): Promise<{ revision: number; rec: ProgressRecord }[]> {
    const history: { revision: number; rec: ProgressRecord }[] = [];
    const h = this.store.watch(this.prefix, {
      onEvent: (e) => {
        const parsed = parseKey(this.prefix, e.key);
        if (e.type === 'put' && parsed.kind === 'progress') {
          history.push({ revision: e.modRevision, rec: decodeRecord('progress', e.key, e.value ?? '', this.fp) });
        }
      },
    });
    this.watches.push(h);
    await h.ready;
    return history;
  }

  /** Writes a spec and a fresh split record, as a leader's seeding would. */
  async seedSplit(id: string, weight = 1, descriptor: unknown = null): Promise<void> {
    const spec = encodeRecord('spec', { v: SCHEMA_VERSION, fp: this.fp, id, weight, descriptor: descriptor as never, generation: 0 });
    await this.store.txn({
      compares: [cmp.absent(specKey(this.prefix, id))],
      success: [op.put(specKey(this.prefix, id), spec), op.put(splitKey(this.prefix, id), encodeRecord('split', initialSplitRecord(id, this.fp)))],
    });
  }

  /**
   * The worker's claim transaction for split `id` by `me`, built from a fresh
   * read: lease key absent and the record at the revision read; writes the
   * record (epoch + 1, owner) and the lease key under `leaseId`.
   */
  async claimTxn(
    client: Store, id: string, me: string, leaseId: string,
    /** The record as read, and optionally the lease key's owner as read (then nothing is read here). */
    read?: { rec: SplitRecord; modRevision: number; leaseOwner?: string | null },
  ): Promise<TxnResult | 'unclaimable'> {
    const sk = splitKey(this.prefix, id);
    const lk = leaseKey(this.prefix, id);
    let seen = read;
    if (!seen) {
      const kv = await client.get(sk);
      if (!kv) throw new Error(`no record at ${sk}`);
      seen = { rec: decodeRecord('split', sk, kv.value, this.fp), modRevision: kv.modRevision };
    }
    let leaseOwner: string | undefined;
    if (read && read.leaseOwner !== undefined) {
      leaseOwner = read.leaseOwner ?? undefined;
    } else {
      const leaseKv = await client.get(lk);
      leaseOwner = leaseKv ? decodeRecord('lease', lk, leaseKv.value, this.fp).owner : undefined;
    }
    const c = classifyClaim(seen.rec, leaseOwner, me, 4);
    if (c.kind === 'unclaimable') return 'unclaimable';
    const next = claimedRecord(seen.rec, me, c);
    const lease = encodeRecord('lease', { v: SCHEMA_VERSION, fp: this.fp, id, owner: me, nonce: `nonce-${me}`, epoch: next.epoch });
    return client.txn({
      compares: [cmp.modRevision(sk, seen.modRevision), cmp.absent(lk)],
      success: [op.put(sk, encodeRecord('split', next)), op.put(lk, lease, leaseId)],
    });
  }

  /** Closes every coordinator and watch of the test (abruptly; their leases are revoked). */
  async close(): Promise<void> {
    await Promise.all(this.coordinators.map((c) => c.close().catch(() => undefined)));
    await Promise.all(this.watches.map((w) => w.close().catch(() => undefined)));
  }
}

/** A promise with its resolve exposed. */
export function gate<T = void>(): { promise: Promise<T>; open: (v: T) => void } {
  let open!: (v: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Awaits `p`, expects it to reject with SplitfleetError `code`, and checks the message names each of `mentions`. */
export async function expectCode(p: Promise<unknown>, code: string, ...mentions: string[]): Promise<Error> {
  const err = await p.then(
    (v) => new Error(`expected a rejection with ${code}, but it resolved with ${JSON.stringify(v)}`),
    (e: unknown) => e,
  );
  expect(isSplitfleetError(err), `expected a SplitfleetError ${code}, got ${String(err)}`).toBe(true);
  expect((err as { code: string }).code, (err as Error).message).toBe(code);
  for (const m of mentions) expect((err as Error).message).toContain(m);
  return err as Error;
}

/** A final plan of the given splits (weight 1 unless given). */
export function finalPlan(ids: string[], weights: Record<string, number> = {}): Planner {
  return () => ({ final: true, splits: ids.map((id) => ({ id, weight: weights[id] ?? 1, descriptor: null })) });
}

/** Sum of a labelled prom-client counter's values matching `labels`. */
export async function counterValue(
  counter: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> },
  labels: Record<string, string> = {},
): Promise<number> {
  const m = await counter.get();
  return m.values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((s, v) => s + v.value, 0);
}
