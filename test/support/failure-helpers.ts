/**
 * Helpers for the real-etcd failure, join, steady-state and overlap tests:
 * fleet members as OS processes (compiled `dist/`) or in-process
 * coordinators, a ledger of processed units, a recorder of the job's whole
 * etcd history (every revision, in order), job snapshots, and bounded polling.
 *
 * Invariants: every wait is bounded and names what it waited for; nothing
 * here sleeps to "let things settle" — tests wait for observable facts.
 * Processes spawned here are killed (SIGCONT, then SIGKILL) by `killAll`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { pacedHandler, syntheticPlanner, type DrainBehaviour } from '../../src/demo/synthetic.js';
import { defaultFingerprint } from '../../src/config.js';
import { SplitfleetError } from '../../src/errors.js';
import { jobPrefix, leaderKey, parseKey, planKey, type KeyKind } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd.js';
import { cmp, op, type Store, type Txn, type TxnResult } from '../../src/store/store.js';

const FLEET_PROCESS = fileURLToPath(new URL('../../dist/src/demo/fleet-process.js', import.meta.url));

/** The compiled fleet process, or a clear failure saying how to build it. */
export function requireDist(): string {
  if (!existsSync(FLEET_PROCESS)) {
    throw new Error(
      `${FLEET_PROCESS} is missing: these tests run fleet members as child processes from the compiled JS. ` +
        `Run 'npx tsc -p tsconfig.json' (or 'npm run build') first.`,
    );
  }
  return FLEET_PROCESS;
}

// ---- polling -----------------------------------------------------------------

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Polls `check` until it returns something truthy (returned), or fails after
 * `timeoutMs` naming `what` (and `explain()` when given).
 */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: { timeoutMs?: number; intervalMs?: number; explain?: () => unknown } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) {
      const extra = options.explain ? `\n${JSON.stringify(options.explain(), null, 1).slice(0, 3000)}` : '';
      throw new Error(`timed out after ${options.timeoutMs ?? 20_000} ms waiting for ${what}${extra}`);
    }
    await sleep(options.intervalMs ?? 50);
  }
}

// ---- the ledger --------------------------------------------------------------

export interface UnitEntry {
  instance: string;
  id: string;
  unit: number;
  epoch: number;
  t: number;
}

export interface LaneEvent {
  instance: string;
  ev: string;
  id?: string;
  epoch?: number;
  progress?: number;
  t: number;
  [k: string]: unknown;
}

/** Every processed unit (and lane event) of a fleet, from processes and in-process handlers alike. */
export class Ledger {
  readonly units: UnitEntry[] = [];
  readonly events: LaneEvent[] = [];

  unitsOf(id: string, filter: { instance?: string; epoch?: number } = {}): UnitEntry[] {
    return this.units.filter(
      (u) => u.id === id && (filter.instance === undefined || u.instance === filter.instance) && (filter.epoch === undefined || u.epoch === filter.epoch),
    );
  }

  /**
   * The last unit processed at `epoch`: its highest unit, or, when the tenancy
   * processed nothing, the progress it resumed from (its 'claimed' event).
   */
  lastProcessed(id: string, epoch: number): number {
    const us = this.unitsOf(id, { epoch });
    if (us.length > 0) return Math.max(...us.map((u) => u.unit));
    const c = this.claimed(id, epoch);
    if (c === undefined) throw new Error(`the ledger has no claim of ${id} at epoch ${epoch}`);
    return (c.progress as number | undefined) ?? 0;
  }

  firstUnit(id: string, epoch: number): number | undefined {
    const us = this.unitsOf(id, { epoch });
    return us.length === 0 ? undefined : Math.min(...us.map((u) => u.unit));
  }

  /** The 'claimed' event of (id, epoch): progress is where the handler resumed. */
  claimed(id: string, epoch: number): LaneEvent | undefined {
    return this.events.find((e) => e.ev === 'claimed' && e.id === id && e.epoch === epoch);
  }

  /** (split, unit) pairs processed more than once. */
  duplicates(ids?: Iterable<string>): string[] {
    const want = ids ? new Set(ids) : undefined;
    const seen = new Map<string, number>();
    for (const u of this.units) {
      if (want && !want.has(u.id)) continue;
      const k = `${u.id}#${u.unit}`;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    return [...seen].filter(([, n]) => n > 1).map(([k]) => k);
  }
}

// ---- fleet members as processes ---------------------------------------------

export interface MemberConfig {
  endpoint: string;
  job: string;
  instance: string;
  splits: number;
  seed: number;
  maxInFlight: number;
  unitMs: number;
  commitEvery: number;
  drain?: DrainBehaviour;
  slowDrainMs?: number;
  minUnits?: number;
  maxUnits?: number;
  config?: Record<string, number>;
}

/** One `fleet-process.js` child; its JSON lines go to `events` and the shared ledger. */
export class Member {
  readonly events: LaneEvent[] = [];
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
  stderr = '';
  private partial = '';

  constructor(readonly cfg: MemberConfig, private readonly ledger: Ledger) {
    this.proc = spawn(process.execPath, [requireDist()], {
      env: { ...process.env, SPLITFLEET_FLEET: JSON.stringify(cfg) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.stdout!.on('data', (chunk: Buffer) => this.onData(chunk.toString()));
    this.proc.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
  }

  get instance(): string {
    return this.cfg.instance;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  private onData(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      const e = { ...o, instance: this.instance } as LaneEvent;
      if (e.ev === 'unit') {
        this.ledger.units.push({ instance: this.instance, id: e.id!, unit: o.unit as number, epoch: e.epoch!, t: e.t });
      } else {
        this.events.push(e);
        this.ledger.events.push(e);
      }
    }
  }

  /** Waits for an event of this member (fails early, with its stderr, if it exits or reports fatal). */
  async waitFor(what: string, pred: (e: LaneEvent) => boolean, timeoutMs = 20_000): Promise<LaneEvent> {
    return waitUntil(
      `${this.instance}: ${what}`,
      () => {
        const fatal = this.events.find((e) => e.ev === 'fatal');
        if (fatal) throw new Error(`${this.instance} reported fatal: ${JSON.stringify(fatal)}\n${this.stderr}`);
        const hit = this.events.find(pred);
        if (hit) return hit;
        if (!this.alive) throw new Error(`${this.instance} exited (${this.proc.exitCode ?? this.proc.signalCode}) while waiting for ${what}\n${this.stderr}`);
        return undefined;
      },
      { timeoutMs },
    );
  }

  signal(sig: NodeJS.Signals): void {
    if (this.alive) this.proc.kill(sig);
  }

  async kill(): Promise<void> {
    if (!this.alive) return;
    this.proc.kill('SIGCONT');
    this.proc.kill('SIGKILL');
    await this.exited;
  }
}

// ---- fleet members in process -----------------------------------------------

export interface InProcessOptions {
  endpoint: string;
  job: string;
  instance: string;
  splits: number;
  seed: number;
  maxInFlight: number;
  unitMs: number;
  commitEvery: number;
  drain?: DrainBehaviour;
  minUnits?: number;
  maxUnits?: number;
  config?: Record<string, number>;
  /** Wraps the member's own EtcdStore (fault injection). */
  wrapStore?: (store: Store) => Store;
}

export interface InProcessMember {
  instance: string;
  coordinator: Coordinator;
  store: EtcdStore;
  close(): Promise<void>;
}

/** A coordinator in this process, on its own EtcdStore, running the synthetic job. */
export async function startInProcess(o: InProcessOptions, ledger: Ledger): Promise<InProcessMember> {
  const store = new EtcdStore({ endpoints: [o.endpoint], opTimeoutMs: 2000 });
  const coordinator = await startCoordinator({
    store: o.wrapStore ? o.wrapStore(store) : store,
    job: o.job,
    instance: o.instance,
    maxInFlight: o.maxInFlight,
    ...(o.config ?? {}),
    planner: syntheticPlanner({ splits: o.splits, seed: o.seed, minUnits: o.minUnits, maxUnits: o.maxUnits }),
    handler: pacedHandler({
      unitMs: o.unitMs,
      commitEvery: o.commitEvery,
      drain: o.drain,
      onUnit: (id, unit, epoch) => ledger.units.push({ instance: o.instance, id, unit, epoch, t: Date.now() }),
      onEvent: (e) => ledger.events.push({ ...e, instance: o.instance, t: Date.now() } as LaneEvent),
    }),
    logger: silentLogger,
  });
  return {
    instance: o.instance,
    coordinator,
    store,
    close: async () => {
      await coordinator.close().catch(() => undefined);
      await store.close().catch(() => undefined);
    },
  };
}

/** The knobs these tests use unless a test says otherwise. */
export const FAST = Object.freeze({
  leaseDurationMs: 2000,
  opTimeoutMs: 500,
  rebalanceDelayMs: 0,
  drainDeadlineMs: 1000,
  reconcileIntervalMs: 2000,
});

// ---- the job's history on etcd ------------------------------------------------

export interface HistoryEvent {
  rev: number;
  type: 'put' | 'delete';
  key: string;
  kind: KeyKind | 'unknown';
  id: string | undefined;
  /** The parsed record (puts only). */
  rec: Record<string, any> | undefined;
  lease: string | undefined;
  /** Local receive time. */
  at: number;
  /**
   * On a 'split' event: the state was produced by a write of `progress.{id}`
   * alone (a commit), not of `split.{id}`; see `Recorder`.
   */
  commit?: boolean;
}

/** Outside every job's prefix (`<root>/<job>/`), inside the recorder's watch. */
const SYNC_KEY = 'splitfleet/test-sync';

/**
 * Follows one job's prefix from the moment it starts (start it before the
 * job's first member): every put and delete, in revision order. `sync()`
 * makes sure everything written before it has been recorded.
 *
 * Committed progress lives in `progress.{id}`, which split.{id} no longer
 * carries. The 'split' events are the split's *state* after each revision
 * that wrote either key: the record with `progress` set to the committed
 * progress then (null before the first commit). A commit (progress.{id}
 * alone) is a 'split' event with `commit: true`; a release or completion,
 * which writes both keys in one transaction, is one event. The raw
 * 'progress' events are recorded too.
 */
export class Recorder {
  readonly events: HistoryEvent[] = [];
  private readonly handle;
  private syncRev = 0;
  private lastRev = 0;
  private readonly splitRecs = new Map<string, Record<string, any>>();
  private readonly committed = new Map<string, unknown>();

  static async start(store: Store, prefix: string): Promise<Recorder> {
    const { revision } = await store.list('splitfleet/', { limit: 1 });
    const r = new Recorder(store, prefix, revision + 1);
    await r.handle.ready;
    return r;
  }

  private constructor(private readonly store: Store, readonly prefix: string, fromRevision: number) {
    this.handle = store.watch('splitfleet/', {
      fromRevision,
      onEvent: (e) => {
        this.lastRev = Math.max(this.lastRev, e.modRevision);
        if (e.key === SYNC_KEY) return;
        if (!e.key.startsWith(prefix)) return;
        const parsed = parseKey(prefix, e.key);
        let rec: Record<string, any> | undefined;
        if (e.type === 'put' && e.value !== undefined) {
          try {
            rec = JSON.parse(e.value) as Record<string, any>;
          } catch {
            rec = undefined;
          }
        }
        const id = parsed.kind === 'unknown' || parsed.kind === 'plan' || parsed.kind === 'leader' ? undefined : parsed.id;
        const event: HistoryEvent = { rev: e.modRevision, type: e.type, key: e.key, kind: parsed.kind, id, rec, lease: e.lease, at: Date.now() };
        if (parsed.kind === 'split' && id !== undefined && e.type === 'put' && rec) {
          this.splitRecs.set(id, rec);
          event.rec = { ...rec, progress: this.committed.get(id) ?? null };
        }
        this.events.push(event);
        if (parsed.kind === 'progress' && id !== undefined && e.type === 'put' && rec) {
          this.committed.set(id, rec.progress);
          const split = this.splitRecs.get(id);
          if (!split) return;
          let same: HistoryEvent | undefined;
          for (let i = this.events.length - 1; i >= 0 && !same; i--) if (this.events[i]!.kind === 'split' && this.events[i]!.id === id) same = this.events[i];
          if (same && same.rev === e.modRevision && same.rec) same.rec = { ...same.rec, progress: rec.progress };
          else {
            this.events.push({ rev: e.modRevision, type: 'put', key: e.key.replace(`${prefix}progress.`, `${prefix}split.`), kind: 'split', id, rec: { ...split, progress: rec.progress }, lease: undefined, at: Date.now(), commit: true });
          }
        }
      },
    });
  }

  /** Writes a marker outside every job and waits until the recorder has seen it. */
  async sync(): Promise<number> {
    const rev = await this.store.put(SYNC_KEY, String(++this.syncRev));
    await waitUntil('the history recorder to catch up', () => this.lastRev >= rev, { timeoutMs: 10_000, intervalMs: 10 });
    return rev;
  }

  of(kind: KeyKind, id?: string): HistoryEvent[] {
    return this.events.filter((e) => e.kind === kind && (id === undefined || e.id === id));
  }

  between(fromRev: number, toRev: number, kind?: KeyKind): HistoryEvent[] {
    return this.events.filter((e) => e.rev > fromRev && e.rev < toRev && (kind === undefined || e.kind === kind));
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/**
 * The fence, checked over one split's whole history: the owner changes only
 * through an epoch bump (a claim), the epoch never goes back, no write at an
 * older epoch lands after a newer claim, every write of an epoch is by that
 * epoch's claimant (or its release), and a lease key is only ever created
 * where none existed. Returns the problems found (empty when sound).
 */
export function fenceProblems(history: HistoryEvent[], id: string): string[] {
  const problems: string[] = [];
  let prev: Record<string, any> | undefined;
  const claimant = new Map<number, string>();
  for (const e of history) {
    if (e.kind !== 'split' || e.id !== id || e.type !== 'put' || !e.rec) continue;
    const r = e.rec;
    if (prev) {
      if (r.epoch < prev.epoch) problems.push(`${id}@${e.rev}: epoch went back ${prev.epoch} → ${r.epoch}`);
      if (r.owner !== '' && r.owner !== prev.owner && r.epoch !== prev.epoch + 1) {
        problems.push(`${id}@${e.rev}: owner ${JSON.stringify(prev.owner)} → ${JSON.stringify(r.owner)} without one epoch bump (${prev.epoch} → ${r.epoch})`);
      }
      if (r.epoch === prev.epoch + 1 && r.owner === '') problems.push(`${id}@${e.rev}: epoch bumped without an owner`);
    }
    if (r.epoch > (prev?.epoch ?? 0)) claimant.set(r.epoch, r.owner);
    else if (r.owner !== '' && claimant.has(r.epoch) && claimant.get(r.epoch) !== r.owner) {
      problems.push(`${id}@${e.rev}: ${r.owner} wrote at epoch ${r.epoch}, claimed by ${claimant.get(r.epoch)}`);
    }
    prev = r;
  }
  // A live lease key is overwritten only by a reclaim: the same instance (a restarted run)
  // taking its own key over, at a new epoch. Another owner over a live key is a double owner.
  let live: Record<string, any> | undefined;
  for (const e of history) {
    if (e.kind !== 'lease' || e.id !== id) continue;
    if (e.type === 'delete') live = undefined;
    else {
      if (live && (e.rec?.owner !== live.owner || !(e.rec?.epoch > live.epoch))) {
        problems.push(`${id}@${e.rev}: lease key of ${live.owner} (epoch ${live.epoch}) overwritten while live by ${e.rec?.owner} (epoch ${e.rec?.epoch})`);
      }
      live = e.rec;
    }
  }
  return problems;
}

// ---- snapshots -----------------------------------------------------------------

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

// ---- a hand-held leadership (a second, rogue leader) ---------------------------

export interface RogueLeader {
  generation: number;
  leaseId: string;
  /** Writes assign.{instance} as this leader would (unguarded: the rogue's write lands). */
  publish(instance: string, splits: string[]): Promise<number>;
  /** Gives the leader key up, so the fleet elects one of its own again. */
  resign(): Promise<void>;
}

/**
 * Takes the job's leadership away from the elected coordinator in one
 * transaction (the `leader` key replaced at the revision read, the plan's
 * generation bumped), as a second leader would after an election the first
 * has not yet noticed. The coordinators see a leader and do not campaign.
 */
export async function takeLeadership(store: Store, root: string, job: string, instance = 'rogue-leader'): Promise<RogueLeader> {
  const prefix = jobPrefix(root, job);
  const fp = fingerprintHash(defaultFingerprint(root, job));
  const leaderKv = await store.get(leaderKey(prefix));
  const planKv = await store.get(planKey(prefix));
  if (!leaderKv || !planKv) throw new Error('takeLeadership: the job has no leader or plan yet');
  const plan = JSON.parse(planKv.value) as Record<string, any>;
  const generation = (plan.generation as number) + 1;
  const leaseId = await store.grantLease(60);
  const res = await store.txn({
    compares: [cmp.modRevision(leaderKey(prefix), leaderKv.modRevision), cmp.modRevision(planKey(prefix), planKv.modRevision)],
    success: [
      op.put(leaderKey(prefix), encodeRecord('leader', { v: SCHEMA_VERSION, fp, instance, generation }), leaseId),
      op.put(planKey(prefix), encodeRecord('plan', { ...(plan as any), generation })),
    ],
  });
  if (!res.won) throw new Error('takeLeadership: the leader key or plan moved under us; retry');
  return {
    generation,
    leaseId,
    publish: (member, splits) =>
      store.put(`${prefix}assign.${member}`, encodeRecord('assign', { v: SCHEMA_VERSION, fp, instance: member, generation, splits })),
    resign: async () => {
      await store.revokeLease(leaseId);
    },
  };
}

// ---- fault injection -------------------------------------------------------------

/**
 * A store whose transactions that write `assign.` records fail (as a lost
 * request) while `failing` is set. Everything else passes through.
 */
export class AssignmentFaults {
  failing = false;
  failures = 0;

  wrap(inner: Store): Store {
    const faults = this;
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return (txn: Txn): Promise<TxnResult> => {
            const writesAssign = txn.success.some((o) => o.op !== 'get' && /\/assign\./.test(o.key));
            if (faults.failing && writesAssign) {
              faults.failures++;
              return Promise.reject(new SplitfleetError('STORE_UNAVAILABLE', 'injected: assignment write lost', { retryable: true }));
            }
            return target.txn(txn);
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
}

/** Sums a prom-client counter's values whose labels match. */
export async function counterValue(metric: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> | { values: { value: number; labels: Record<string, unknown> }[] } }, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}
