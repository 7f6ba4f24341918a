#!/usr/bin/env node
/**
 * One OS process of bench/fleet.ts: a `leader` (one coordinator, started
 * first and alone, so it wins the election and seeds the plan), a `host`
 * (many coordinators sharing one EtcdStore) or a `probe` (one coordinator
 * alone, so that one worker's RSS, start-up, CPU and watch traffic can be
 * read off its process). Configuration is the JSON in SPLITFLEET_FLEET.
 *
 * Only the public API is used (`startCoordinator`, `EtcdStore`, the
 * coordinator's `held`, `isLeader`, `leaderStats`, `metrics`), and every
 * coordinator's store is wrapped in a counting decorator (fleet-store.ts).
 *
 * Every split runs a simulated handler: about `handlerMs` of work (0.8× to
 * 1.2×, fixed per split id, so lanes do not complete in lock-step),
 * `commit()` every `commitEveryMs`, `complete()` at the end; a drain request
 * commits the progress and returns (a cooperative release), an abort returns
 * at once, and a claim resumes from the committed progress.
 *
 * The process talks to bench/fleet.ts over IPC: `{ cmd: 'phase', name }`
 * closes the current measurement phase (a `phase` line with the counters,
 * event-loop delay, CPU and RSS of that phase) and opens the next. It exits
 * by itself when its parent goes away, at `deadlineAt`, or on SIGTERM.
 *
 * Output (stdout, JSON lines): `started` (a member's coordinator started),
 * `restart`, `leading`/`deposed`, `first-held` (the process's first handler),
 * `member-held` (each member's first handler), `tick` (every `tickMs`: RSS,
 * lanes open, members up) and `phase`.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import { EtcdStore } from '../src/etcd.js';
import {
  divisibleRange, isSplitfleetError, jobPrefix, silentLogger, defaultLogger, startCoordinator,
  type Coordinator, type PlanResult, type SplitHandle,
} from '../src/index.js';
import { addCounts, countingStore, emptyCounts, type StoreCounts } from './fleet-store.js';
import { gcPauses, type GcFigures } from './gc-pauses.js';
import { onCpuStalls, type OnCpuFigures } from './on-cpu-stalls.js';

export type FleetRole = 'leader' | 'host' | 'probe';

export interface FleetHostConfig {
  role: FleetRole;
  /** A name for this process in the bench's output. */
  name: string;
  endpoint: string;
  job: string;
  instances: string[];
  splits: number;
  seed: number;
  lanes: number;
  handlerMs: number;
  commitEveryMs: number;
  /** The first `giants` splits are giants (decision 0063): 1,000× the median weight and duration, their handlers divisible. */
  giants?: number;
  /** Coordinator knobs (leaseDurationMs, …); absent ones take the library's defaults. `layout`: a new job's (decision 0037). */
  knobs: Record<string, number>; layout?: 'keys' | 'packed';
  /** How many coordinators of this process may be starting at once. */
  startConcurrency: number;
  tickMs: number;
  /** Wall-clock ms after which the process exits whatever happens. */
  deadlineAt: number;
  /** A file to append this process's long stalls to, a JSON line each (on-cpu-stalls.ts). */
  stallLog?: string;
}

/** A histogram's cumulative state (from prom-client), summed over this process's coordinators. */
export interface HistogramState { count: number; sum: number; buckets: Record<string, number> }

/** Counters that only grow; a phase line carries their values at the phase's end. */
export interface Cumulative {
  busyMs: number;
  handlersStarted: number;
  completions: number;
  commits: number;
  drains: number;
  aborts: number;
  lost: number;
  errors: number;
  cpuUserUs: number;
  cpuSystemUs: number;
  store: StoreCounts;
  decisions: number;
  recordsWritten: number;
  decisionSeconds: HistogramState | null;
  assignmentLatency: HistogramState | null;
}

export interface PhaseLine {
  ev: 'phase';
  t: number;
  name: string;
  next: string;
  startedAt: number;
  cumulative: Cumulative;
  loop: { maxMs: number; p99Ms: number; p50Ms: number; meanMs: number };
  /** Garbage collections in the phase (gc-pauses.ts). */
  gc: GcFigures;
  /** The longest stall's own part: the main thread's CPU in it (on-cpu-stalls.ts). */
  onCpu: OnCpuFigures;
  rssMax: number;
  rss: number;
  heapUsed: number;
  /** Refill latencies (ms) seen in this phase: a member's completion → its next handler start. */
  refills: number[];
  /** Completions still waiting for their lane's next split when the phase ended, by age. */
  pendingRefills: { count: number; olderThan1s: number; oldestMs: number };
  membersUp: number;
  lanesOpen: number;
  leading: string[];
}

const emit = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ t: Date.now(), ...o })}\n`);

/** A small deterministic hash of a string to [0, 1): per-split weights and durations. */
function unit(s: string, seed: number): number {
  let h = (2166136261 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  h ^= h >>> 15;
  h = Math.imul(h, 2246822507) >>> 0;
  h ^= h >>> 13;
  return h / 2 ** 32;
}

/** Splits the planner makes per turn of the loop, and returns per call (a page of a listing: `more`, with a cursor). */
const PLAN_PAGE = 10_000, PLAN_CALL = 500_000;

/** A final plan of `n` splits, weights 1–64 MiB log-uniform, no descriptor, in pages with a cursor as a real planner lists a
 * bucket (a 10M plan made whole is held whole by the leader), a turn per PLAN_PAGE (the bench's cost, not the library's). */
async function plan(n: number, seed: number, cursor: unknown, giants: number, handlerMs: number): Promise<PlanResult> {
  const width = String(n - 1).length;
  const from = typeof cursor === 'number' ? cursor : 0, to = Math.min(n, from + PLAN_CALL);
  const splits = new Array<{ id: string; weight: number; descriptor?: { from: number; to: number } }>(to - from);
  for (let i = from; i < to; i++) {
    const id = `s-${String(i).padStart(width, '0')}`;
    // A giant: 1,000× the median weight (2^3 MiB) and the median handler's duration, as ms units to divide.
    splits[i - from] = i < giants
      ? { id, weight: 1000 * 8 * 1048576, descriptor: { from: 0, to: 1000 * handlerMs } }
      : { id, weight: Math.round(1048576 * Math.pow(2, unit(id, seed) * 6)) };
    if ((i + 1) % PLAN_PAGE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return to < n ? { final: false, more: true, cursor: to, expected: n, splits } : { final: true, splits };
}

function sleep(ms: number, signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((s) => s.aborted)) return resolve();
    const done = () => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of signals) s.addEventListener('abort', done, { once: true });
  });
}

interface Member {
  instance: string;
  coordinator?: Coordinator;
  counts: StoreCounts;
  /** Completion times waiting for this member's next handler start. */
  pending: number[];
  startedAt: number;
  firstHeld: boolean;
}

async function histogram(c: Coordinator, name: string): Promise<HistogramState | null> {
  const metric = c.metrics.registry.getSingleMetric(name) as { get?: () => Promise<{ values: { value: number; labels: Record<string, unknown>; metricName?: string }[] }> } | undefined;
  if (!metric?.get) return null;
  const got = await metric.get();
  const out: HistogramState = { count: 0, sum: 0, buckets: {} };
  for (const v of got.values) {
    if (v.metricName?.endsWith('_count')) out.count += v.value;
    else if (v.metricName?.endsWith('_sum')) out.sum += v.value;
    else if (v.metricName?.endsWith('_bucket')) out.buckets[String(v.labels.le)] = v.value;
  }
  return out;
}

function addHistogram(a: HistogramState | null, b: HistogramState | null): HistogramState | null {
  if (!b) return a;
  if (!a) return { count: b.count, sum: b.sum, buckets: { ...b.buckets } };
  a.count += b.count;
  a.sum += b.sum;
  for (const [k, v] of Object.entries(b.buckets)) a.buckets[k] = (a.buckets[k] ?? 0) + v;
  return a;
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.SPLITFLEET_FLEET ?? '{}') as FleetHostConfig;
  // Exit at once (no drain) on SIGTERM, when the parent goes, and at the deadline: the bench is over.
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
  setTimeout(() => {
    emit({ ev: 'deadline' });
    process.exit(4);
  }, Math.max(1000, cfg.deadlineAt - Date.now())).unref();

  const prefix = jobPrefix('splitfleet', cfg.job);
  // One client per process. The store's own per-call deadline is generous: a long listing under
  // load can outlast the coordinator's opTimeoutMs (which still bounds the protocol's own calls).
  const shared = new EtcdStore({ endpoints: [cfg.endpoint], opTimeoutMs: 30_000 });

  // ---- lane accounting ----------------------------------------------------------
  let open = 0;
  let busyMs = 0;
  let lastChange = performance.now();
  const account = (delta: number) => {
    const now = performance.now();
    busyMs += open * (now - lastChange);
    lastChange = now;
    open += delta;
  };
  const totals = { handlersStarted: 0, completions: 0, commits: 0, drains: 0, aborts: 0, lost: 0, errors: 0 };
  let refills: number[] = [];
  let firstHeld = false;

  /**
   * Runs one handler's work, counted: a lost lease ends it quietly; any other error (a store failure
   * of one of our writes) is counted and rethrown, so the split is released without consuming an
   * attempt; the lane is given back either way.
   */
  const counted = async (work: () => Promise<void>): Promise<void> => {
    try {
      await work();
    } catch (e) {
      if (isSplitfleetError(e, 'LEASE_LOST')) {
        totals.lost++;
        return;
      }
      totals.errors++;
      throw e;
    } finally {
      account(-1);
    }
  };

  /** A giant's work, `commitEveryMs` at a time through divisibleRange, committing each step. */
  const divisibleWork = async (h: SplitHandle): Promise<void> => {
    const range = divisibleRange(h);
    for (let run; (run = await range.next(cfg.commitEveryMs)); ) {
      if (h.drainSignal.aborted || h.signal.aborted) {
        if (!h.signal.aborted) await range.commit();
        return;
      }
      await sleep(run.to - run.from, [h.signal]);
      await range.commit();
      totals.commits++;
    }
    await range.complete();
    totals.completions++;
  };

  const handlerFor = (m: Member) => async (h: SplitHandle): Promise<void> => {
    const startedAt = Date.now();
    account(+1);
    totals.handlersStarted++;
    if (!firstHeld) {
      firstHeld = true;
      // What the process had read and been sent until then: its start-up cost.
      const store = emptyCounts();
      for (const x of members) addCounts(store, x.counts);
      const cpu = process.cpuUsage();
      // CPU as well as wall time: on a loaded machine the wall time mostly measures the wait for a core.
      emit({ ev: 'first-held', instance: m.instance, sinceProcessStartMs: startedAt - performance.timeOrigin, cpuMs: (cpu.user + cpu.system) / 1000, rss: process.memoryUsage().rss, store });
    }
    if (!m.firstHeld) {
      m.firstHeld = true;
      emit({ ev: 'member-held', instance: m.instance, sinceMemberStartMs: startedAt - m.startedAt });
    }
    const freed = m.pending.shift();
    if (freed !== undefined) refills.push(startedAt - freed);
    // A giant or one of its residuals (descriptor { from, to } in ms of work): divisible (decision 0063).
    if (h.descriptor !== null && typeof h.descriptor === 'object' && 'to' in h.descriptor) return counted(() => divisibleWork(h));
    return counted(() => timedWork(m, h));
  };

  /** An ordinary split's work: about handlerMs of it, committed every commitEveryMs, resumed from its progress. */
  const timedWork = async (m: Member, h: SplitHandle): Promise<void> => {
    const total = Math.round(cfg.handlerMs * (0.8 + 0.4 * unit(h.id, cfg.seed + 1)));
    const progress = h.progress as { doneMs?: unknown } | null;
    let done = typeof progress?.doneMs === 'number' ? progress.doneMs : 0;
    const signals = [h.signal, h.drainSignal];
    while (done < total) {
      if (h.signal.aborted) {
        totals.aborts++;
        return;
      }
      if (h.drainSignal.aborted) {
        // Cooperative drain: commit what was done, return (the split is released with it).
        await h.commit({ doneMs: done });
        totals.commits++;
        totals.drains++;
        return;
      }
      const t0 = performance.now();
      await sleep(Math.min(cfg.commitEveryMs, total - done), signals);
      done = Math.min(total, done + Math.round(performance.now() - t0));
      if (h.signal.aborted) continue;
      if (done < total) {
        await h.commit({ doneMs: done });
        totals.commits++;
      }
    }
    await h.complete({ doneMs: done });
    totals.completions++;
    m.pending.push(Date.now());
  };

  // ---- members ------------------------------------------------------------------
  const members: Member[] = cfg.instances.map((instance) => ({ instance, counts: emptyCounts(), pending: [], startedAt: 0, firstHeld: false }));
  const leading = new Set<string>();
  let membersUp = 0;
  let starting = 0;
  const run = async (m: Member): Promise<void> => {
    for (;;) {
      const { store, counts } = countingStore(shared, prefix, { shared: true });
      m.counts = addCounts(counts, m.counts); // keep what earlier runs of this member counted
      m.startedAt = Date.now();
      m.pending = [];
      starting++;
      let started = false;
      try {
        const coordinator = await startCoordinator({
          store, job: cfg.job, instance: m.instance, maxInFlight: cfg.lanes, ...cfg.knobs, ...(cfg.layout ? { layout: cfg.layout } : {}),
          // Built only if this member leads (the leader process; a host only after a failover).
          planner: ({ cursor }) => plan(cfg.splits, cfg.seed, cursor, cfg.giants ?? 0, cfg.handlerMs),
          handler: handlerFor(m),
          logger: process.env.BENCH_LOG ? defaultLogger({ instance: m.instance }) : silentLogger,
        });
        starting--;
        started = true;
        m.coordinator = coordinator;
        membersUp++;
        emit({ ev: 'started', instance: m.instance, startMs: Date.now() - m.startedAt });
        const verdict = await coordinator.done.then(
          (v) => ({ verdict: v }),
          (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
        );
        membersUp--;
        m.coordinator = undefined;
        emit({ ev: 'restart', instance: m.instance, ...verdict });
        if ('verdict' in verdict) return; // the job finished: nothing left to do
      } catch (e) {
        if (!started) starting--;
        emit({ ev: 'restart', instance: m.instance, code: (e as { code?: string }).code, message: (e as Error).message });
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  };

  setInterval(() => {
    for (const m of members) {
      const c = m.coordinator;
      if (c?.isLeader && !leading.has(m.instance)) {
        leading.add(m.instance);
        emit({ ev: 'leading', instance: m.instance });
      } else if (!c?.isLeader && leading.has(m.instance)) {
        leading.delete(m.instance);
        emit({ ev: 'deposed', instance: m.instance });
      }
    }
  }, 20).unref();

  // ---- measurement phases -------------------------------------------------------
  const loop: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  // GC pauses, to tell a collection from a long task when the loop's max is high.
  const gc = gcPauses();
  const stalls = onCpuStalls(cfg.stallLog === undefined ? undefined : (stall) => appendFileSync(cfg.stallLog!, `${JSON.stringify(stall)}\n`));
  let phase = { name: 'start', startedAt: Math.round(performance.timeOrigin), rssMax: process.memoryUsage().rss };
  const sampleRss = () => {
    const rss = process.memoryUsage().rss;
    phase.rssMax = Math.max(phase.rssMax, rss);
    return rss;
  };
  setInterval(() => {
    const rss = sampleRss();
    emit({ ev: 'tick', rss, lanesOpen: open, membersUp, starting, completions: totals.completions, commits: totals.commits, leading: [...leading] });
  }, cfg.tickMs).unref();

  const cumulative = async (): Promise<Cumulative> => {
    account(0);
    const cpu = process.cpuUsage();
    const store = emptyCounts();
    let decisions = 0;
    let recordsWritten = 0;
    let decisionSeconds: HistogramState | null = null;
    let assignmentLatency: HistogramState | null = null;
    for (const m of members) {
      addCounts(store, m.counts);
      const c = m.coordinator;
      if (!c) continue;
      decisions += c.leaderStats?.decisions ?? 0;
      recordsWritten += c.leaderStats?.recordsWritten ?? 0;
      decisionSeconds = addHistogram(decisionSeconds, await histogram(c, 'splitfleet_decision_seconds'));
      assignmentLatency = addHistogram(assignmentLatency, await histogram(c, 'splitfleet_assignment_latency_seconds'));
    }
    return { busyMs, ...totals, cpuUserUs: cpu.user, cpuSystemUs: cpu.system, store, decisions, recordsWritten, decisionSeconds, assignmentLatency };
  };

  process.on('message', (msg: { cmd?: string; name?: string }) => {
    if (msg?.cmd !== 'phase' || typeof msg.name !== 'string') return;
    const next = msg.name;
    const ending = phase;
    // Snapshot the synchronous figures now, so the phase ends when it was asked to.
    const t = Date.now();
    const rss = sampleRss();
    const loopFigures = { maxMs: loop.max / 1e6, p99Ms: loop.percentile(99) / 1e6, p50Ms: loop.percentile(50) / 1e6, meanMs: loop.mean / 1e6 };
    loop.reset();
    const gcFigures = gc.take();
    const onCpu = stalls.take();
    const phaseRefills = refills;
    refills = [];
    const pend = members.flatMap((m) => m.pending).map((at) => t - at);
    phase = { name: next, startedAt: t, rssMax: rss };
    void cumulative().then((c) => {
      const line: PhaseLine = {
        ev: 'phase', t, name: ending.name, next, startedAt: ending.startedAt, cumulative: c, loop: loopFigures, gc: gcFigures, onCpu,
        rssMax: ending.rssMax, rss, heapUsed: process.memoryUsage().heapUsed, refills: phaseRefills,
        pendingRefills: { count: pend.length, olderThan1s: pend.filter((a) => a > 1000).length, oldestMs: Math.max(0, ...pend) },
        membersUp, lanesOpen: open, leading: [...leading],
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
    });
  });

  emit({ ev: 'boot', role: cfg.role, name: cfg.name, members: members.length, sinceProcessStartMs: Date.now() - performance.timeOrigin });
  // Start the members, at most startConcurrency at a time.
  let next = 0;
  const startOne = (): void => {
    if (next >= members.length) return;
    void run(members[next++]!);
  };
  while (next < members.length) {
    while (starting < cfg.startConcurrency && next < members.length) startOne();
    await new Promise((r) => setTimeout(r, 10));
  }
}

main().catch((e) => {
  emit({ ev: 'fatal', code: (e as { code?: string }).code, message: (e as Error).message });
  process.exit(3);
});
