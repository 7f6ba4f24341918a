/**
 * A held split without a fleet, for the unit tests of a lane and of the
 * worker's parts: a MemoryStore on a VirtualClock, a job's spec and split
 * records written as the leader would, a claim sent as a worker would
 * (`claimTxn`), a `Lane` opened on it, and a worker's parts (session, own
 * view, metrics) for the claimer and the worker. Nothing here decides
 * anything: the records and transactions are protocol/'s.
 */
import { VirtualClock } from '../../src/clock.js';
import { resolveConfig, type Config, type ConfigOptions } from '../../src/config.js';
import { noEmit } from '../../src/coordinator/events.js';
import { Lane, type EndedLane, type LaneContext } from '../../src/coordinator/lanes/lane.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { Metrics } from '../../src/coordinator/metrics.js';
import { Session } from '../../src/coordinator/session.js';
import { WorkerView } from '../../src/coordinator/views/worker-view.js';
import type { WorkerParts } from '../../src/coordinator/worker/claiming.js';
import { initialSplitRecord } from '../../src/protocol/claims.js';
import { assignKey, jobPrefix, leaseKey, progressKey, specKey, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION, type SpecRecord, type SplitRecord } from '../../src/protocol/records.js';
import { claimTxn } from '../../src/protocol/txns.js';
import { MemoryStore } from '../../src/store/memory.js';

export interface World {
  clock: VirtualClock;
  store: MemoryStore;
  config: Config;
  prefix: string;
  fp: string;
}

/** A job `j` of instance `w0` on a fresh MemoryStore and VirtualClock. */
export function world(options: Partial<ConfigOptions> = {}): World {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const config = resolveConfig({ job: 'j', instance: 'w0', opTimeoutMs: 500, leaseDurationMs: 3000, drainDeadlineMs: 1000, ...options });
  return { clock, store, config, prefix: jobPrefix(config.root, config.job), fp: fingerprintHash(config.fingerprint) };
}

/** Writes split `id`'s spec and its first record, as the leader's seeding does. */
export async function seedSplit(w: World, id: string, weight = 1): Promise<SpecRecord> {
  const spec: SpecRecord = { v: SCHEMA_VERSION, fp: w.fp, id, weight, descriptor: null, generation: 1 };
  await w.store.put(specKey(w.prefix, id), encodeRecord('spec', spec));
  await w.store.put(splitKey(w.prefix, id), encodeRecord('split', initialSplitRecord(id, w.fp)));
  return spec;
}

/** Writes `assign.{instance}` naming `ids`, as the leader's publication does. */
export async function assign(w: World, ids: string[], instance = w.config.instance): Promise<void> {
  await w.store.put(assignKey(w.prefix, instance), encodeRecord('assign', { v: SCHEMA_VERSION, fp: w.fp, instance, generation: 1, splits: ids }));
}

/** What the store holds of split `id`: its record (decoded), the revisions of its keys and the lease its lease key is on. */
export async function stored(w: World, id: string): Promise<{ record: SplitRecord; splitRevision: number; progress: unknown; progressRevision: number; lease: string | undefined }> {
  const split = await w.store.get(splitKey(w.prefix, id));
  const progress = await w.store.get(progressKey(w.prefix, id));
  const lease = await w.store.get(leaseKey(w.prefix, id));
  return {
    record: decodeRecord('split', split!.key, split!.value, w.fp),
    splitRevision: split!.modRevision,
    progress: progress ? decodeRecord('progress', progress.key, progress.value, w.fp).progress : undefined,
    progressRevision: progress?.modRevision ?? 0,
    lease: lease?.lease,
  };
}

/** A split claimed by `w0` under `leaseId` (a create claim), as a Lane is opened on it. */
export async function claimed(w: World, id: string, leaseId: string): Promise<{ spec: SpecRecord; record: SplitRecord; revision: number }> {
  const spec = await seedSplit(w, id);
  const kv = await w.store.get(splitKey(w.prefix, id));
  const c = claimTxn(
    { prefix: w.prefix, me: w.config.instance, nonce: 'n', sessionLease: leaseId, fp: w.fp },
    id, { kind: 'claim', claim: 'create', consumesAttempt: true }, { rec: initialSplitRecord(id, w.fp), modRevision: kv!.modRevision }, undefined, w.config.maxAttempts,
  );
  const res = await w.store.txn(c.txn);
  if (!res.won) throw new Error(`claim of ${id} lost`);
  return { spec, record: c.next, revision: res.revision };
}

/** A lane on a freshly claimed split `id`, and the ends it reported (`onEnd`). */
export async function openLane(w: World, id = 's', extra: Partial<LaneContext> = {}): Promise<{ lane: Lane; ends: EndedLane[]; leaseId: string }> {
  const leaseId = await w.store.grantLease(3600);
  const { spec, record, revision } = await claimed(w, id, leaseId);
  const ends: EndedLane[] = [];
  const lane = new Lane(
    { store: w.store, config: w.config, clock: w.clock, prefix: w.prefix, leaseId, onEnd: (_l, e) => ends.push(e), random: () => 0.5, ...extra },
    id, spec, record, revision, null, 0,
  );
  return { lane, ends, leaseId };
}

/** A worker's parts on `w` (its session, its own view, metrics), as the coordinator builds them for the claimer and the worker. */
export async function workerParts(w: World): Promise<{ session: Session; view: WorkerView; metrics: Metrics; parts: WorkerParts; close(): Promise<void> }> {
  const session = await Session.open(w.store, w.config, w.clock, w.prefix);
  const view = new WorkerView(w.store, w.prefix, w.fp, w.config.instance, (e) => { throw e; }, w.clock);
  await view.start();
  const metrics = new Metrics();
  const parts: WorkerParts = {
    store: w.store, config: w.config, view, session, metrics, log: silentLogger, emit: noEmit, random: () => 0.5,
    unexpected: (where, e) => { throw new Error(`unexpected error in ${where}: ${String(e)}`); },
  };
  return { session, view, metrics, parts, close: async () => { await view.close(); await session.close(); } };
}

/** The sum of a counter's series whose labels match. */
export async function counted(metric: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}
