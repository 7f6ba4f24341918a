#!/usr/bin/env node
/**
 * The fleet at scale (issue 10, item 7): a final plan of `--splits` splits,
 * `--members` members hosted in `--hosts` processes, `--lanes` lanes each,
 * handlers of about `--handler-seconds` committing every `--commit-every-ms`,
 * on a throwaway loopback etcd. Measurements, not assertions.
 *
 * One run, in order:
 *   1. etcd starts (8 GiB quota; etcd's periodic auto-compaction when
 *      `--compaction on`);
 *   2. the leader process (one coordinator) starts alone, wins the election
 *      and seeds the plan: time to seed = leader process spawned → the `plan`
 *      record final with planned == splits (watched here);
 *   3. the host processes start their members (`--start-concurrency` at a
 *      time per process), until every member's coordinator has started;
 *   4. the probe processes (`--probes`, each one coordinator alone) start one
 *      after another: each one's start-up is
 *      process start → its first handler, in wall time and in the CPU the
 *      process used (load stretches the first, not the second);
 *   5. `--warmup-s`, then the steady window of `--duration-s`, between two
 *      phase marks sent to every process over IPC (fleet-host.ts reports the
 *      counters, CPU, event-loop delay and RSS of each phase);
 *   6. every process is stopped, etcd too.
 * Before the main run, a baseline run at `--baseline-splits` (default 10k)
 * with the same fleet measures the same figures, for the 1M / 10k ratios of
 * the probe's figures and the leader's RSS per split.
 *
 * stdout: a table, then one JSON summary line. Progress goes to stderr.
 * Only 127.0.0.1 is used; every child is killed if this process stops, and
 * exits by itself at the run's deadline or if this process goes away.
 *
 * Usage: npm run build && npm run bench:fleet -- [--splits 1000000] [--members 200] [--hosts 4]
 *   [--lanes 4] [--handler-seconds 10] [--commit-every-ms 1000] [--duration-s 120]
 *   [--compaction off|on|both] [--compaction-retention 15s] [--baseline-splits 10000]
 *   [--baseline-duration-s 30] [--warmup-s 15] [--probes 3] [--start-concurrency 8] [--knobs JSON]
 *   [--seed 1] [--timeout-s 900] [--json FILE] [--leader-heap default|MiB] [--leader-prof DIR] [--layout keys|packed]
 *   [--host-nice 10] (the member hosts' nice value: the leader, probes and etcd stay at 0; 0 to share the CPU evenly)
 *   [--giants K] (the first K splits are 1,000× the median weight and duration, their handlers divisible: decision 0063)
 *   [--until-done] (after the window, run to the verdict and measure the tail after the queue empties, in median splits)
 * --leader-prof DIR: the leader's CPU profile, and its stalls with more than 20 ms of its own CPU
 * (stalls-<run>.jsonl); `node dist/bench/stall-profile.js DIR` shows what ran in each.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, setPriority, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EtcdStore } from '../src/etcd.js';
import { CONFIG_DEFAULTS, jobPrefix, type WatchHandle } from '../src/index.js';
import { firstTouchUs } from './on-cpu-stalls.js';
import { etcdMetrics, startBenchEtcd, type EtcdBackendFigures } from './etcd.js';
import { FleetChild, type Line } from './fleet-runner.js';
import type { Cumulative, FleetHostConfig, FleetRole, HistogramState, PhaseLine } from './fleet-host.js';
import { benchArgs } from './args.js';
import { quantile } from './stats.js';

const HOST = fileURLToPath(new URL('./fleet-host.js', import.meta.url));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const log = (msg: string) => process.stderr.write(`[fleet ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);


// ---- options -------------------------------------------------------------------

interface Options {
  splits: number;
  members: number;
  hosts: number;
  lanes: number;
  handlerMs: number;
  commitEveryMs: number;
  durationS: number;
  compaction: 'off' | 'on' | 'both';
  compactionRetention: string;
  baselineSplits: number;
  baselineDurationS: number;
  warmupS: number;
  probes: number;
  startConcurrency: number;
  knobs: Record<string, number>;
  seed: number;
  timeoutS: number;
  json: string | undefined;
  /** The leader's --max-old-space-size; undefined: Node's default. */
  leaderHeapMiB: number | undefined;
  /** A directory for the leader's CPU profile (--cpu-prof), if wanted. */
  leaderProf: string | undefined;
  /** The job's layout (decision 0037): 'packed' for queue pages, 'keys' for two records per split. */
  layout: 'keys' | 'packed';
  /** The hosts' nice value (members only; the leader, the probes and etcd stay at 0). */
  hostNice: number;
  /** The first `giants` splits are 1,000× the median weight and duration, divisible (decision 0063). */
  giants: number;
  /** After the steady window, wait for the verdict and measure the tail after the queue empties. */
  untilDone: boolean;
}

function options(): Options {
  const { values } = benchArgs({
    splits: { type: 'string', default: '1000000' },
    members: { type: 'string', default: '200' },
    hosts: { type: 'string', default: '4' },
    lanes: { type: 'string', default: '4' },
    'handler-seconds': { type: 'string', default: '10' },
    'commit-every-ms': { type: 'string', default: '1000' },
    'duration-s': { type: 'string', default: '120' },
    compaction: { type: 'string', default: 'both' },
    // Short, so that several compactions land inside the window (etcd's periodic mode compacts
    // every retention period, to the revision of one period ago).
    'compaction-retention': { type: 'string', default: '15s' },
    'baseline-splits': { type: 'string', default: '10000' },
    'baseline-duration-s': { type: 'string' },
    'warmup-s': { type: 'string' },
    'start-concurrency': { type: 'string', default: '8' },
    probes: { type: 'string', default: '3' },
    knobs: { type: 'string', default: '{}' },
    seed: { type: 'string', default: '1' },
    'timeout-s': { type: 'string', default: '900' },
    json: { type: 'string' },
    'leader-heap': { type: 'string', default: 'default' },
    'leader-prof': { type: 'string' },
    // The library's default (decision 0054: packed), so a run without --layout measures what a new user gets.
    layout: { type: 'string', default: CONFIG_DEFAULTS.layout },
    'host-nice': { type: 'string', default: '10' },
    giants: { type: 'string', default: '0' },
    'until-done': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const num = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name}: must be a number ≥ ${min} (got ${v})`);
    return n;
  };
  const compaction = values.compaction;
  if (compaction !== 'off' && compaction !== 'on' && compaction !== 'both') throw new Error(`--compaction: off, on or both (got ${compaction})`);
  const knobs = JSON.parse(values.knobs) as Record<string, number>;
  const handlerMs = Math.round(num('handler-seconds', values['handler-seconds'], 0.1) * 1000);
  const durationS = num('duration-s', values['duration-s'], 5);
  const o: Options = {
    splits: Math.round(num('splits', values.splits, 1)),
    members: Math.round(num('members', values.members, 1)),
    hosts: Math.round(num('hosts', values.hosts, 1)),
    lanes: Math.round(num('lanes', values.lanes, 1)),
    handlerMs,
    commitEveryMs: Math.round(num('commit-every-ms', values['commit-every-ms'], 10)),
    durationS,
    compaction,
    compactionRetention: values['compaction-retention'],
    baselineSplits: Math.round(num('baseline-splits', values['baseline-splits'], 0)),
    // Short by default: 200 members × 4 lanes complete ~80 splits a second, and a 10k job must
    // not run dry before the window ends (the baseline is for one worker's figures).
    baselineDurationS: values['baseline-duration-s'] !== undefined ? num('baseline-duration-s', values['baseline-duration-s'], 5) : Math.min(durationS, 30),
    warmupS: values['warmup-s'] !== undefined ? num('warmup-s', values['warmup-s'], 0) : handlerMs / 1000 + 5,
    startConcurrency: Math.round(num('start-concurrency', values['start-concurrency'], 1)),
    probes: Math.round(num('probes', values.probes, 1)),
    knobs,
    seed: Math.round(num('seed', values.seed, 0)),
    timeoutS: num('timeout-s', values['timeout-s'], 30),
    json: values.json,
    leaderHeapMiB: values['leader-heap'] === 'default' ? undefined : Math.round(num('leader-heap', values['leader-heap'], 64)),
    leaderProf: values['leader-prof'],
    hostNice: Math.min(19, Math.round(num('host-nice', values['host-nice'], 0))),
    layout: values.layout === 'packed' ? 'packed' : 'keys',
    giants: Math.round(num('giants', values.giants, 0)),
    untilDone: values['until-done'] === true,
  };
  if (values.layout !== 'keys' && values.layout !== 'packed') throw new Error(`--layout: keys or packed (got ${values.layout})`);
  if (o.hosts > o.members) throw new Error(`--hosts (${o.hosts}) must not exceed --members (${o.members})`);
  return o;
}

const USAGE = `Usage: npm run build && npm run bench:fleet -- [--splits 1000000] [--members 200] [--hosts 4]
  [--lanes 4] [--handler-seconds 10] [--commit-every-ms 1000] [--duration-s 120]
  [--compaction off|on|both] [--compaction-retention 15s] [--baseline-splits 10000]
  [--baseline-duration-s 30] [--warmup-s handler+5] [--probes 3] [--start-concurrency 8] [--knobs JSON]
  [--seed 1] [--timeout-s 900] [--json FILE] [--leader-heap default|MiB] [--leader-prof DIR] [--layout keys|packed] [--host-nice 10]
  [--giants K] [--until-done]`;

// ---- child processes -----------------------------------------------------------

/** A process of the fleet (fleet-host.ts), run as every bench runs its fleet (fleet-runner.ts; it kills them all if this process stops). */
class Child extends FleetChild {
  constructor(readonly cfg: FleetHostConfig, execArgv: string[]) {
    super({ script: HOST, envVar: 'SPLITFLEET_FLEET', config: cfg, execArgv, ipc: true });
  }

  // A change of leader is rare and worth its reason: say who, when, and what the deposed one last logged.
  protected override onLine(line: Line): void {
    if (line.ev === 'leading' || line.ev === 'deposed') {
      log(`${this.name}: ${String(line.instance)} ${line.ev}${line.ev === 'deposed' ? `; its last log lines:\n${this.stderr.slice(-1500)}` : ''}`);
    }
  }

  get name(): string {
    return this.cfg.name;
  }

  get lanes(): number {
    return this.cfg.instances.length * this.cfg.lanes;
  }

  count(ev: string): number {
    return this.lines.reduce((n, l) => n + (l.ev === ev ? 1 : 0), 0);
  }

  phase(name: string): PhaseLine | undefined {
    return this.lines.find((l) => l.ev === 'phase' && l.name === name) as unknown as PhaseLine | undefined;
  }

  /** Ends the current phase and starts `name`. */
  mark(name: string): void {
    if (this.proc.connected) this.proc.send({ cmd: 'phase', name });
  }

  problem(): string | undefined {
    const fatal = this.lines.find((l) => l.ev === 'fatal' || l.ev === 'deadline');
    if (fatal) return `${this.name}: ${JSON.stringify(fatal)}\n${this.stderr}`;
    if (this.exited !== undefined) return `${this.name} exited (${this.exited})\n${this.stderr}`;
    return undefined;
  }
}

/** Waits for `pred`, failing on the deadline or when a child dies. */
async function until<T>(what: string, pred: () => T | undefined | false, deadline: number, procs: Child[], describe?: () => string): Promise<T> {
  let report = Date.now() + 15_000;
  for (;;) {
    const v = pred();
    if (v) return v;
    for (const p of procs) {
      const problem = p.problem();
      if (problem) throw new Error(`while waiting for ${what}: ${problem}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    if (Date.now() > report) {
      report = Date.now() + 15_000;
      log(`… waiting for ${what}${describe ? ` (${describe()})` : ''}`);
    }
    await sleep(50);
  }
}

const lastOf = (c: Child, ev: string): Line | undefined => {
  for (let i = c.lines.length - 1; i >= 0; i--) if (c.lines[i]!.ev === ev) return c.lines[i];
  return undefined;
};
const lastTick = (c: Child): number => (lastOf(c, 'tick')?.lanesOpen as number | undefined) ?? 0;

// ---- figures -------------------------------------------------------------------


function histogramDelta(a: HistogramState | null, b: HistogramState | null): HistogramState | null {
  if (!b) return null;
  if (!a) return b;
  const buckets: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.buckets)) buckets[k] = v - (a.buckets[k] ?? 0);
  return { count: b.count - a.count, sum: b.sum - a.sum, buckets };
}

/** The upper bound of the bucket holding quantile q (prom-client buckets are cumulative). */
function histogramQuantile(h: HistogramState | null, q: number): number {
  if (!h || h.count === 0) return NaN;
  const les = Object.keys(h.buckets).filter((k) => k !== '+Inf').map(Number).sort((x, y) => x - y);
  for (const le of les) if ((h.buckets[String(le)] ?? 0) >= q * h.count) return le;
  return Infinity;
}

function sumCumulative(lines: (PhaseLine | undefined)[], pick: (c: Cumulative) => number): number {
  return lines.reduce((s, l) => s + (l ? pick(l.cumulative) : 0), 0);
}

interface RunParams {
  label: string;
  splits: number;
  durationS: number;
  compaction: boolean;
}

type Figures = Record<string, any>;

async function runFleet(o: Options, p: RunParams): Promise<Figures> {
  const runStarted = Date.now();
  const deadline = runStarted + o.timeoutS * 1000;
  const loadStart = loadavg();
  log(`${p.label}: ${p.splits.toLocaleString('en')} splits, ${o.members} members in ${o.hosts} hosts at nice ${o.hostNice} (+ leader + ${o.probes} probes), ${o.lanes} lanes each; ` +
    `handlers ${o.handlerMs} ms committing every ${o.commitEveryMs} ms; steady window ${p.durationS} s; etcd auto-compaction ${p.compaction ? `periodic ${o.compactionRetention}` : 'off'}`);
  // Completions expected by the window's end (start-up guessed at 30 s): a job that runs out of
  // runnable splits leaves lanes idle, which would read as lost utilisation.
  const lanesPlanned = (o.members + 1 + o.probes) * o.lanes;
  const expected = (lanesPlanned / (o.handlerMs / 1000)) * (30 + o.warmupS + p.durationS);
  if (expected > 0.8 * p.splits) {
    log(`${p.label}: warning: ${lanesPlanned} lanes may complete ~${Math.round(expected)} of the ${p.splits} splits by the window's end; ` +
      'the job may run dry (use more splits or a shorter window)');
  }
  const etcd = await startBenchEtcd({
    quotaBackendBytes: 8 * 1024 ** 3,
    ...(p.compaction ? { autoCompaction: { mode: 'periodic' as const, retention: o.compactionRetention } } : {}),
  });
  const job = `fleet-${p.splits}`;
  const prefix = jobPrefix('splitfleet', job);
  const observer = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 10_000 });
  const procs: Child[] = [];
  const handles: WatchHandle[] = [];
  const etcdAt: Record<string, EtcdBackendFigures & { t: number }> = {};
  /** etcd's figures every 5 s of the steady window (its ends included). */
  const etcdSeries: (EtcdBackendFigures & { t: number })[] = [];
  const sampleEtcd = async (name: string) => {
    etcdAt[name] = { t: Date.now(), ...(await etcdMetrics(etcd.endpoint)) };
    return etcdAt[name];
  };
  let plan: { final: boolean; planned: number; at: number; verdict?: string } | undefined;
  /** The leader's summary: when it first said nothing is queued (after seeding), and the residuals it counted last. */
  let queueEmptyAt: number | undefined;
  let residuals = 0;
  const leaderKeys: number[] = [];
  try {
    await sampleEtcd('start');
    for (const [key, apply] of [
      [`${prefix}plan`, (v: string) => {
        const rec = JSON.parse(v) as { final?: boolean; planned?: number; verdict?: string };
        plan = { final: rec.final === true, planned: rec.planned ?? 0, at: Date.now(), ...(rec.verdict !== undefined ? { verdict: rec.verdict } : {}) };
      }],
      [`${prefix}summary`, (v: string) => {
        // Summaries come at most every 2 s: the queue's end is known to that.
        const rec = JSON.parse(v) as { queued?: number; backoff?: number; final?: boolean; seeded?: number; residuals?: number };
        residuals = rec.residuals ?? residuals;
        if (queueEmptyAt === undefined && rec.final === true && (rec.seeded ?? 0) > 0 && (rec.queued ?? 1) + (rec.backoff ?? 0) === 0) queueEmptyAt = Date.now();
      }],
      [`${prefix}leader`, () => leaderKeys.push(Date.now())],
    ] as const) {
      const h = observer.watch(key, { onEvent: (e) => e.type === 'put' && e.key === key && apply(e.value!) });
      handles.push(h);
      await h.ready;
    }
    const base = {
      endpoint: etcd.endpoint, job, splits: p.splits, seed: o.seed, lanes: o.lanes, handlerMs: o.handlerMs, giants: Math.min(o.giants, p.splits),
      commitEveryMs: o.commitEveryMs, knobs: o.knobs, layout: o.layout, tickMs: 1000, deadlineAt: deadline + 30_000,
    };
    const child = (role: FleetRole, name: string, instances: string[], execArgv: string[], stallLog?: string) => {
      const c = new Child({ ...base, role, name, instances, startConcurrency: o.startConcurrency, stallLog }, execArgv);
      procs.push(c);
      return c;
    };

    // The leader, alone: it wins the election and seeds the plan.
    // Node's default heap limits unless --leader-heap says otherwise (issue 30: a user's leader runs
    // in a pod with the defaults, so that is what the figures must be taken under).
    const leaderArgs = [
      ...(o.leaderHeapMiB !== undefined ? [`--max-old-space-size=${o.leaderHeapMiB}`] : []),
      ...(o.leaderProf !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${o.leaderProf}`] : []),
    ];
    // With a profile, the leader also logs its long stalls (on-cpu-stalls.ts), to find each in it (bench/stall-profile.ts).
    // The stall log is written from the leader's first second; Node creates the profile's directory only at exit.
    if (o.leaderProf !== undefined) mkdirSync(o.leaderProf, { recursive: true });
    const leader = o.leaderProf === undefined ? child('leader', 'leader', ['leader'], leaderArgs)
      : child('leader', 'leader', ['leader'], leaderArgs, join(o.leaderProf, `stalls-${p.label.replace(/\W+/g, '-')}.jsonl`));
    await until('the leader to lead', () => leader.find((l) => l.ev === 'leading'), deadline, procs);
    // Its boot (module loading, the WASM engine, the first snapshot, the election) is a phase of its own.
    leader.mark('seeding');
    await until(`the plan to be seeded (${p.splits} splits)`, () => plan?.final === true && plan.planned === p.splits, deadline, procs,
      () => `plan ${JSON.stringify(plan)}; leader RSS ${mib((lastOf(leader, 'tick')?.rss as number | undefined) ?? 0)} MiB`);
    const seededAt = plan!.at;
    const seedMs = seededAt - leader.spawnedAt;
    leader.mark('fleet');
    await sampleEtcd('seeded');
    log(`${p.label}: seeded in ${(seedMs / 1000).toFixed(1)} s; starting ${o.members} members in ${o.hosts} processes`);

    // The hosts.
    const hostsAt = Date.now();
    const hosts: Child[] = [];
    for (let h = 0; h < o.hosts; h++) {
      const n = Math.floor(o.members / o.hosts) + (h < o.members % o.hosts ? 1 : 0);
      const instances = Array.from({ length: n }, (_, i) => `h${h}-m${String(i).padStart(3, '0')}`);
      const host = child('host', `host${h}`, instances, ['--max-old-space-size=8192']);
      // 200 members share this machine's 2 cores with the leader; in a deployment they run on machines of their own.
      // At a lower priority they cannot hold the leader off the CPU, so its loop figures are its own work's.
      if (o.hostNice !== 0) setPriority(host.proc.pid!, o.hostNice);
      hosts.push(host);
    }
    const membersUp = () => {
      const seen = new Set<string>();
      for (const h of hosts) for (const l of h.lines) if (l.ev === 'started') seen.add(l.instance as string);
      return seen.size;
    };
    await until(`${o.members} members to start`, () => membersUp() === o.members, deadline, procs, () => `${membersUp()} started, ${hosts.reduce((n, h) => n + h.count('restart'), 0)} restarts, last: ${JSON.stringify(hosts.map((h) => lastOf(h, 'restart')).find(Boolean) ?? null)}`);
    const allStartedAt = Date.now();
    log(`${p.label}: every member started ${((allStartedAt - hostsAt) / 1000).toFixed(1)} s after the hosts were spawned; starting the probe`);

    // The probes, each alone in its process, one after another (a start-up is one noisy sample).
    const probes: Child[] = [];
    const firstHelds: Line[] = [];
    for (let i = 0; i < o.probes; i++) {
      const probe = child('probe', `probe${i}`, [`probe${i}`], ['--max-old-space-size=4096']);
      probes.push(probe);
      const held = await until(`probe ${i} to hold a split`, () => probe.find((l) => l.ev === 'first-held'), deadline, procs);
      firstHelds.push(held);
      log(`${p.label}: probe ${i} held its first split ${Math.round(held.sinceProcessStartMs as number)} ms after its process started`);
    }
    log(`${p.label}: warming up ${o.warmupS} s`);
    await sleep(o.warmupS * 1000);

    // The steady window.
    const t0 = Date.now();
    for (const c of procs) c.mark('steady');
    etcdSeries.push(await sampleEtcd('steady-start'));
    log(`${p.label}: steady window, ${p.durationS} s`);
    const progressTimer = setInterval(() => {
      const open = procs.reduce((s, c) => s + lastTick(c), 0);
      const lanes = procs.reduce((s, c) => s + c.lanes, 0);
      log(`${p.label}: ${Math.round((Date.now() - t0) / 1000)} s, ${open}/${lanes} lanes open`);
    }, 15_000);
    try {
      const end = t0 + p.durationS * 1000;
      let nextSample = t0 + 5000;
      while (Date.now() < end) {
        if (Date.now() >= nextSample && end - Date.now() > 2500) {
          nextSample += 5000;
          etcdSeries.push({ t: Date.now(), ...(await etcdMetrics(etcd.endpoint)) });
        }
        for (const c of procs) {
          const problem = c.problem();
          if (problem) throw new Error(`during the steady window: ${problem}`);
        }
        await sleep(Math.min(250, end - Date.now()));
      }
    } finally {
      clearInterval(progressTimer);
    }
    const t1 = Date.now();
    // The steady window ends here, before --until-done's wait: its figures (lanes busy, rates) are
    // per second of [t0, t1] (marked after the wait, busy lane-seconds of the tail were divided by
    // the window alone: utilisation over 100 %).
    for (const c of procs) c.mark('end');
    etcdSeries.push(await sampleEtcd('steady-end'));
    // --until-done: the job to its verdict, and the tail after the queue emptied (the giants' divisions at work).
    let tail: { queueEmptyAt: number; verdictAt: number; verdict: string } | undefined;
    if (o.untilDone) {
      await until('the verdict', () => plan?.verdict !== undefined, deadline, procs, () => `queue empty at ${queueEmptyAt ?? 'not yet'}; residuals ${residuals}`);
      tail = { queueEmptyAt: queueEmptyAt ?? plan!.at, verdictAt: plan!.at, verdict: plan!.verdict! };
    }
    await until('every process to report the steady window', () => procs.every((c) => c.phase('steady')), Math.min(deadline, Date.now() + 60_000), procs);
    const windowS = (t1 - t0) / 1000;

    // ---- the figures ----
    const before = (c: Child) => (c === leader ? c.phase('fleet') : c.phase('start'));
    // The second half of the window: with auto-compaction, the file grows until it holds one
    // retention's worth of history, then reuses freed pages; this half is nearer that plateau.
    const seriesHalf = etcdSeries.filter((e) => e.t >= t0 + (t1 - t0) / 2);
    const h0 = seriesHalf[0]!;
    const h1 = seriesHalf[seriesHalf.length - 1]!;
    const halfS = Math.max(1, (h1.t - h0.t) / 1000);
    const steady = procs.map((c) => c.phase('steady')!);
    const prev = procs.map(before);
    const delta = (pick: (c: Cumulative) => number) => sumCumulative(steady, pick) - sumCumulative(prev, pick);
    const lanes = procs.reduce((s, c) => s + c.lanes, 0);
    const busyMs = delta((c) => c.busyMs);
    const refills = steady.flatMap((l) => l.refills);
    const pending = steady.reduce((s, l) => ({ count: s.count + l.pendingRefills.count, olderThan1s: s.olderThan1s + l.pendingRefills.olderThan1s, oldestMs: Math.max(s.oldestMs, l.pendingRefills.oldestMs) }), { count: 0, olderThan1s: 0, oldestMs: 0 });
    const decisionsHist = procs.reduce<HistogramState | null>((acc, c, i) => {
      const d = histogramDelta(prev[i]?.cumulative.decisionSeconds ?? null, steady[i]!.cumulative.decisionSeconds);
      if (!d) return acc;
      if (!acc) return d;
      acc.count += d.count;
      acc.sum += d.sum;
      for (const [k, v] of Object.entries(d.buckets)) acc.buckets[k] = (acc.buckets[k] ?? 0) + v;
      return acc;
    }, null);
    const decisions = delta((c) => c.decisions);

    const ticks = (c: Child, from = 0, to = Infinity) => c.lines.filter((l) => l.ev === 'tick' && l.t >= from && l.t <= to);
    const maxRss = (c: Child, from = 0, to = Infinity) => Math.max(0, ...ticks(c, from, to).map((l) => l.rss as number));
    const leaderBoot = leader.phase('start')!;
    const leaderSeeding = leader.phase('seeding')!;
    const leaderFleet = leader.phase('fleet')!;
    const leaderSteady = leader.phase('steady')!;
    const leaderPhases = [leaderSeeding, leaderFleet, leaderSteady];

    // One worker's figures: each probe's, then their median.
    const probeFigures = probes.map((probe, i) => {
      const steadyLine = probe.phase('steady')!;
      const beforeLine = probe.phase('start')!;
      const a = beforeLine.cumulative;
      const b = steadyLine.cumulative;
      const byKind: Record<string, number> = {};
      for (const [k, v] of Object.entries(b.store.watchEventsByKind)) {
        const r = (v - (a.store.watchEventsByKind[k] ?? 0)) / windowS;
        if (r > 0) byKind[k] = round(r);
      }
      const held = firstHelds[i]!;
      return {
        startupMs: Math.round(held.sinceProcessStartMs as number),
        startupCpuMs: Math.round(held.cpuMs as number),
        spawnToFirstHeldMs: (held.t as number) - probe.spawnedAt,
        startupKeysRead: (held.store as Cumulative['store']).keysRead,
        startupWatchEvents: (held.store as Cumulative['store']).watchEvents,
        rssAtFirstHeldMiB: mib(held.rss as number),
        rssSteadyMaxMiB: mib(steadyLine.rssMax),
        rssEndMiB: mib(steadyLine.rss),
        cpuMsPerS: round((b.cpuUserUs + b.cpuSystemUs - (a.cpuUserUs + a.cpuSystemUs)) / 1000 / windowS),
        watchEventsPerS: round((b.store.watchEvents - a.store.watchEvents) / windowS),
        watchEventsPerSByKind: byKind,
        watchEventBytesPerS: Math.round((b.store.watchEventBytes - a.store.watchEventBytes) / windowS),
        txnsPerS: round((b.store.txns - a.store.txns) / windowS),
        watchesOpen: b.store.watchesOpen,
        loopSteadyMaxMs: round(steadyLine.loop.maxMs),
      };
    });
    const median = (pick: (f: (typeof probeFigures)[number]) => number) => quantile(probeFigures.map(pick), 0.5);
    const memberHeld = hosts.flatMap((h) => h.lines.filter((l) => l.ev === 'member-held').map((l) => l.sinceMemberStartMs as number));
    const memberStart = hosts.flatMap((h) => h.lines.filter((l) => l.ev === 'started').map((l) => l.startMs as number));
    const e0 = etcdAt['steady-start']!;
    const e1 = etcdAt['steady-end']!;
    const eS = etcdAt.start!;
    const eSeeded = etcdAt.seeded!;
    const perHour = (a: number, b: number) => ((b - a) / windowS) * 3600;
    const commits = delta((c) => c.commits);
    const completions = delta((c) => c.completions);
    const restarts = procs.reduce((n, c) => n + c.count('restart'), 0);
    const loadEnd = loadavg();

    const figures: Figures = {
      label: p.label, splits: p.splits, memberCount: o.members, hosts: o.hosts, lanesPerMember: o.lanes, fleetLanes: lanes,
      handlerMs: o.handlerMs, commitEveryMs: o.commitEveryMs, windowS, compaction: p.compaction ? `periodic ${o.compactionRetention}` : 'off',
      wallS: (Date.now() - runStarted) / 1000,
      giants: Math.min(o.giants, p.splits), residuals,
      ...(tail ? { tail: { verdict: tail.verdict, afterQueueEmptyS: round((tail.verdictAt - tail.queueEmptyAt) / 1000), medianSplitS: o.handlerMs / 1000, ratio: round((tail.verdictAt - tail.queueEmptyAt) / o.handlerMs, 2) } } : {}),
      load: { start: loadStart, end: loadEnd },
      seed: { ms: seedMs, fromElectionMs: seededAt - (leader.find((l) => l.ev === 'leading')!.t as number) },
      leader: {
        rssMaxMiB: mib(maxRss(leader)),
        rssSeededMiB: mib(leaderSeeding.rss),
        rssSteadyMaxMiB: mib(leaderSteady.rssMax),
        rssEndMiB: mib(leaderSteady.rss),
        // From election on (seeding, members joining, steady): the boot is reported on its own.
        loopMaxMs: round(Math.max(...leaderPhases.map((l) => l.loop.maxMs))),
        loopBootMaxMs: round(leaderBoot.loop.maxMs),
        loopSeedingMaxMs: round(leaderSeeding.loop.maxMs), loopSeedingP99Ms: round(leaderSeeding.loop.p99Ms),
        loopJoiningMaxMs: round(leaderFleet.loop.maxMs), loopJoiningP99Ms: round(leaderFleet.loop.p99Ms),
        loopSteadyMaxMs: round(leaderSteady.loop.maxMs), loopSteadyP99Ms: round(leaderSteady.loop.p99Ms),
        // The longest GC pause per phase (from election on), to tell a collection from a long task.
        gcMaxMs: { seeding: round(leaderSeeding.gc.maxMs), joining: round(leaderFleet.gc.maxMs), steady: round(leaderSteady.gc.maxMs) },
        gcMaxKind: { seeding: leaderSeeding.gc.maxKind, joining: leaderFleet.gc.maxKind, steady: leaderSteady.gc.maxKind },
        // The longest stall's own part per phase (the main thread's CPU in it; on-cpu-stalls.ts): null before Node 22.19.
        loopOwnMaxMs: ownMax(leaderPhases.map((l) => l.onCpu.maxOwnMs)),
        loopOwnMs: { seeding: leaderSeeding.onCpu.maxOwnMs, joining: leaderFleet.onCpu.maxOwnMs, steady: leaderSteady.onCpu.maxOwnMs },
        // The page faults in each of those stalls (the machine's first touches: machine.firstTouchUs).
        loopOwnFaults: { seeding: leaderSeeding.onCpu.maxOwnFaults, joining: leaderFleet.onCpu.maxOwnFaults, steady: leaderSteady.onCpu.maxOwnFaults },
        cpuSteadyPerS: round(((leaderSteady.cumulative.cpuUserUs + leaderSteady.cumulative.cpuSystemUs) - (leaderFleet.cumulative.cpuUserUs + leaderFleet.cumulative.cpuSystemUs)) / 1000 / windowS),
        watchEventsSteadyPerS: round((leaderSteady.cumulative.store.watchEvents - leaderFleet.cumulative.store.watchEvents) / windowS),
        stillLeading: leaderSteady.leading.includes('leader'),
      },
      // Terms won, from every process's `isLeader` (the first election is not a change).
      leaderChanges: Math.max(0, procs.reduce((n, c) => n + c.count('leading'), 0) - 1),
      leaderKeyWrites: leaderKeys.length,
      decisions: {
        count: decisions, perS: round(decisions / windowS),
        computeCount: decisionsHist?.count ?? null,
        computeMeanMs: decisionsHist && decisionsHist.count > 0 ? round((decisionsHist.sum / decisionsHist.count) * 1000, 2) : null,
        computeP99BucketMs: decisionsHist ? histogramQuantile(decisionsHist, 0.99) * 1000 : null,
        recordsWrittenPerS: round(delta((c) => c.recordsWritten) / windowS),
      },
      // Medians over the probes (lower median for an even count); each probe's figures in `probes`.
      probe: {
        count: probeFigures.length,
        startupMs: median((f) => f.startupMs),
        startupSamplesMs: probeFigures.map((f) => f.startupMs),
        startupCpuMs: median((f) => f.startupCpuMs),
        spawnToFirstHeldMs: median((f) => f.spawnToFirstHeldMs),
        startupKeysRead: median((f) => f.startupKeysRead),
        startupWatchEvents: median((f) => f.startupWatchEvents),
        rssAtFirstHeldMiB: median((f) => f.rssAtFirstHeldMiB),
        rssSteadyMaxMiB: median((f) => f.rssSteadyMaxMiB),
        rssEndMiB: median((f) => f.rssEndMiB),
        cpuMsPerS: median((f) => f.cpuMsPerS),
        watchEventsPerS: median((f) => f.watchEventsPerS),
        watchEventsPerSByKind: probeFigures[0]!.watchEventsPerSByKind,
        watchEventBytesPerS: median((f) => f.watchEventBytesPerS),
        txnsPerS: median((f) => f.txnsPerS),
        loopSteadyMaxMs: median((f) => f.loopSteadyMaxMs),
      },
      probes: probeFigures,
      members: {
        count: o.members,
        allStartedS: round((allStartedAt - hostsAt) / 1000),
        startMsP50: quantile(memberStart, 0.5), startMsMax: Math.max(0, ...memberStart),
        firstHeldMsP50: quantile(memberHeld, 0.5), firstHeldMsMax: Math.max(0, ...memberHeld),
        hostRssMaxMiB: hosts.map((h) => mib(maxRss(h))),
        hostCpuSteadyMsPerS: hosts.map((h) => {
          const a = h.phase('start')!.cumulative;
          const b = h.phase('steady')!.cumulative;
          return round(((b.cpuUserUs + b.cpuSystemUs) - (a.cpuUserUs + a.cpuSystemUs)) / 1000 / windowS);
        }),
        hostLoopSteadyMaxMs: hosts.map((h) => round(h.phase('steady')!.loop.maxMs)),
        restarts,
      },
      lanes: {
        utilisation: round(busyMs / (lanes * windowS * 1000), 4),
        busyLaneS: round(busyMs / 1000), availableLaneS: round(lanes * windowS),
        completionsPerS: round(completions / windowS), commitsPerS: round(commits / windowS),
        drains: delta((c) => c.drains), lost: delta((c) => c.lost), errors: delta((c) => c.errors), aborts: delta((c) => c.aborts),
      },
      refill: {
        samples: refills.length, p50Ms: quantile(refills, 0.5), p99Ms: quantile(refills, 0.99), maxMs: Math.max(0, ...refills),
        pendingAtEnd: pending,
      },
      etcd: {
        dbSizeStartMiB: mib(eS.dbSize), dbSizeSeededMiB: mib(eSeeded.dbSize),
        // What the queue costs etcd: database bytes the seeding added, per split.
        dbBytesPerSplitSeeded: Math.round((eSeeded.dbSize - eS.dbSize) / Math.max(1, p.splits)),
        dbSizeSteadyStartMiB: mib(e0.dbSize), dbSizeSteadyEndMiB: mib(e1.dbSize),
        dbSizeInUseSteadyStartMiB: mib(e0.dbSizeInUse), dbSizeInUseSteadyEndMiB: mib(e1.dbSizeInUse),
        dbGrowthMiBPerHour: round(perHour(e0.dbSize, e1.dbSize) / 1048576, 1),
        dbInUseGrowthMiBPerHour: round(perHour(e0.dbSizeInUse, e1.dbSizeInUse) / 1048576, 1),
        dbGrowthSecondHalfMiBPerHour: round((((h1.dbSize - h0.dbSize) / halfS) * 3600) / 1048576, 1),
        dbInUseGrowthSecondHalfMiBPerHour: round((((h1.dbSizeInUse - h0.dbSizeInUse) / halfS) * 3600) / 1048576, 1),
        bytesPerRevision: Math.round((e1.dbSize - e0.dbSize) / Math.max(1, e1.revision - e0.revision)),
        series: etcdSeries.map((e) => ({ s: round((e.t - t0) / 1000), dbSizeMiB: mib(e.dbSize), inUseMiB: mib(e.dbSizeInUse), revision: e.revision, compactRevision: e.compactRevision })),
        keys: e1.keys, revisionsPerS: round((e1.revision - e0.revision) / windowS),
        compactRevision: e1.compactRevision,
        cpuMsPerS: round(((e1.cpuSeconds - e0.cpuSeconds) * 1000) / windowS),
        rssEndMiB: mib(e1.rss),
      },
    };
    return figures;
  } catch (e) {
    for (const c of procs) {
      const last = c.lines.filter((l) => l.ev !== 'tick' && l.ev !== 'phase').slice(-4);
      log(`${c.name}: exit ${c.exited ?? 'running'}; last ${JSON.stringify(last)}\n${c.stderr.slice(-1500)}`);
    }
    throw e;
  } finally {
    await Promise.all(procs.map((c) => c.stop()));
    await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
    await observer.close().catch(() => undefined);
    await etcd.stop();
  }
}

const short = (n: number) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));
const mib = (b: number) => Math.round((b / 1048576) * 10) / 10;
/** The largest of per-phase figures, null when the runtime measured none. */
const ownMax = (xs: (number | null)[]): number | null => (xs.some((x) => x === null) ? null : Math.max(...(xs as number[])));
function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

// ---- report --------------------------------------------------------------------

function table(runs: Figures[]): string {
  const rows: [string, (f: Figures) => unknown][] = [
    ['splits', (f) => f.splits.toLocaleString('en')],
    ['members × lanes (fleet lanes)', (f) => `${f.memberCount} × ${f.lanesPerMember} (+ leader, ${f.probe.count} probes) = ${f.fleetLanes}`],
    ['etcd auto-compaction', (f) => f.compaction],
    ['giants (1,000× the median) / residuals divided off', (f) => `${f.giants} / ${f.residuals}`],
    ['tail after the queue empties (--until-done): s, × the median split', (f) => (f.tail ? `${f.tail.afterQueueEmptyS} s, ${f.tail.ratio}× (verdict ${f.tail.verdict})` : '–')],
    ['load average at start → end', (f) => `${f.load.start.map((x: number) => x.toFixed(1)).join(' ')} → ${f.load.end.map((x: number) => x.toFixed(1)).join(' ')}`],
    ['time to seed: leader spawned (elected) → plan final', (f) => `${(f.seed.ms / 1000).toFixed(1)} s (${(f.seed.fromElectionMs / 1000).toFixed(1)} s)`],
    ['leader RSS: seeded / steady max / overall max', (f) => `${f.leader.rssSeededMiB} / ${f.leader.rssSteadyMaxMiB} / ${f.leader.rssMaxMiB} MiB`],
    ['leader event loop max: boot (start → elected)', (f) => `${f.leader.loopBootMaxMs} ms`],
    ['leader event loop max (p99): seeding', (f) => `${f.leader.loopSeedingMaxMs} (${f.leader.loopSeedingP99Ms}) ms`],
    ['leader event loop max (p99): members joining', (f) => `${f.leader.loopJoiningMaxMs} (${f.leader.loopJoiningP99Ms}) ms`],
    ['leader event loop max (p99): steady', (f) => `${f.leader.loopSteadyMaxMs} (${f.leader.loopSteadyP99Ms}) ms`],
    ['leader longest GC pause: seeding / joining / steady', (f) => {
      const g = f.leader.gcMaxMs, k = f.leader.gcMaxKind;
      return `${g.seeding} (${k.seeding}) / ${g.joining} (${k.joining}) / ${g.steady} (${k.steady}) ms`;
    }],
    ['leader longest stall, own part (on CPU): seeding / joining / steady', (f) => {
      const o = f.leader.loopOwnMs, p = f.leader.loopOwnFaults;
      return o.steady === null ? 'n/a (Node < 22.19)' : `${o.seeding} / ${o.joining} / ${o.steady} ms (page faults in them: ${p.seeding} / ${p.joining} / ${p.steady})`;
    }],
    ['leader CPU, watch events (steady)', (f) => `${f.leader.cpuSteadyPerS} ms/s, ${f.leader.watchEventsSteadyPerS} events/s`],
    ['decisions per s; engine time mean / p99 bucket', (f) => `${f.decisions.perS}/s; ${f.decisions.computeMeanMs} ms / ≤ ${f.decisions.computeP99BucketMs} ms`],
    ['assignment records written per s', (f) => f.decisions.recordsWrittenPerS],
    ['leader changes', (f) => f.leaderChanges],
    ['probe start-up (process start → first split held)', (f) => `${f.probe.startupMs} ms of ${JSON.stringify(f.probe.startupSamplesMs)} (${f.probe.startupKeysRead} keys read)`],
    ['probe start-up CPU (process start → first split held)', (f) => `${f.probe.startupCpuMs} ms`],
    ['probe RSS: first held / steady max', (f) => `${f.probe.rssAtFirstHeldMiB} / ${f.probe.rssSteadyMaxMiB} MiB`],
    ['probe CPU per s', (f) => `${f.probe.cpuMsPerS} ms/s`],
    ['probe watch events per s (by kind)', (f) => `${f.probe.watchEventsPerS} ${JSON.stringify(f.probe.watchEventsPerSByKind)}`],
    ['members: all started; first split held p50 / max', (f) => `${f.members.allStartedS} s; ${f.members.firstHeldMsP50} / ${f.members.firstHeldMsMax} ms`],
    ['host processes: RSS max', (f) => `${f.members.hostRssMaxMiB.join(', ')} MiB`],
    ['host processes: CPU (steady)', (f) => `${f.members.hostCpuSteadyMsPerS.join(', ')} ms/s`],
    ['lane utilisation (steady)', (f) => `${(f.lanes.utilisation * 100).toFixed(1)} % (${f.lanes.busyLaneS} of ${f.lanes.availableLaneS} lane-s)`],
    ['completions, progress commits per s (fenced writes)', (f) => `${f.lanes.completionsPerS}, ${f.lanes.commitsPerS} (${round(f.lanes.completionsPerS + f.lanes.commitsPerS)})`],
    ['refill latency p50 / p99 / max (samples)', (f) => `${f.refill.p50Ms} / ${f.refill.p99Ms} / ${f.refill.maxMs} ms (${f.refill.samples})`],
    ['completions unrefilled at the end (> 1 s)', (f) => `${f.refill.pendingAtEnd.count} (${f.refill.pendingAtEnd.olderThan1s})`],
    ['drains, lost lanes, handler errors, restarts', (f) => `${f.lanes.drains}, ${f.lanes.lost}, ${f.lanes.errors}, ${f.members.restarts}`],
    ['etcd db size: empty / seeded / window start → end', (f) => `${f.etcd.dbSizeStartMiB} / ${f.etcd.dbSizeSeededMiB} / ${f.etcd.dbSizeSteadyStartMiB} → ${f.etcd.dbSizeSteadyEndMiB} MiB`],
    ['etcd db bytes per split, seeded', (f) => `${f.etcd.dbBytesPerSplitSeeded} B`],
    ['etcd db in use: window start → end', (f) => `${f.etcd.dbSizeInUseSteadyStartMiB} → ${f.etcd.dbSizeInUseSteadyEndMiB} MiB`],
    ['etcd db growth per hour, window (size; in use)', (f) => `${f.etcd.dbGrowthMiBPerHour}; ${f.etcd.dbInUseGrowthMiBPerHour} MiB/h`],
    ['etcd db growth per hour, 2nd half (size; in use)', (f) => `${f.etcd.dbGrowthSecondHalfMiBPerHour}; ${f.etcd.dbInUseGrowthSecondHalfMiBPerHour} MiB/h`],
    ['etcd db bytes per revision (window)', (f) => f.etcd.bytesPerRevision],
    ['etcd revisions per s, CPU, RSS', (f) => `${f.etcd.revisionsPerS}/s, ${f.etcd.cpuMsPerS} ms/s, ${f.etcd.rssEndMiB} MiB`],
  ];
  const header = ['figure', ...runs.map((r) => r.label)];
  const body = rows.map(([name, get]) => [name, ...runs.map((r) => {
    try {
      return String(get(r));
    } catch {
      return '–';
    }
  })]);
  return [header, header.map(() => '---'), ...body].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

function ratios(main: Figures, base: Figures | undefined): Figures | undefined {
  if (!base) return undefined;
  const r = (a: number, b: number) => round(a / b, 2);
  return {
    of: `${main.label} / ${base.label}`,
    probeRss: r(main.probe.rssSteadyMaxMiB, base.probe.rssSteadyMaxMiB),
    probeStartup: r(main.probe.startupMs, base.probe.startupMs),
    probeStartupCpu: r(main.probe.startupCpuMs, base.probe.startupCpuMs),
    probeCpu: r(main.probe.cpuMsPerS, base.probe.cpuMsPerS),
    probeWatchEvents: r(main.probe.watchEventsPerS, base.probe.watchEventsPerS),
    leaderRssPerSplitKiB: round(((main.leader.rssSteadyMaxMiB - base.leader.rssSteadyMaxMiB) * 1024) / (main.splits - base.splits), 2),
  };
}

function targets(main: Figures, base: Figures | undefined, rat: Figures | undefined): [string, string, boolean | null][] {
  const of = base ? `at ${short(main.splits)} ≤ 1.2× its figure at ${short(base.splits)}` : 'at 1M ≤ 1.2× its figure at 10k';
  return [
    [`worker RSS ${of}`, rat ? `${rat.probeRss}×` : 'no baseline', rat ? rat.probeRss <= 1.2 : null],
    [`worker start-up ${of}`, rat ? `${rat.probeStartup}×` : 'no baseline', rat ? rat.probeStartup <= 1.2 : null],
    // The same start-up in the CPU it used: its wall time on a loaded machine is mostly the wait for a core.
    [`worker start-up CPU ${of}`, rat ? `${rat.probeStartupCpu}×` : 'no baseline', rat ? rat.probeStartupCpu <= 1.2 : null],
    ['seeding ≤ 60 s', `${(main.seed.ms / 1000).toFixed(1)} s`, main.seed.ms <= 60_000],
    ['lane utilisation ≥ 95 %', `${(main.lanes.utilisation * 100).toFixed(1)} %`, main.lanes.utilisation >= 0.95],
    ['refill p99 ≤ 1 s', `${main.refill.p99Ms} ms`, main.refill.p99Ms <= 1000],
    [`leader RSS ≤ 1 KiB per split (${base ? `${short(base.splits)} → ${short(main.splits)}` : '10k → 1M'} difference)`, rat ? `${rat.leaderRssPerSplitKiB} KiB` : 'no baseline', rat ? rat.leaderRssPerSplitKiB <= 1 : null],
    ['leader event-loop max ≤ 50 ms from election on (seeding included)', `${main.leader.loopMaxMs} ms`, main.leader.loopMaxMs <= 50],
    // The same stalls, less the time the leader waited for a core (the fleet shares the machine with it).
    ['leader longest stall, own part (on CPU) ≤ 50 ms from election on', main.leader.loopOwnMaxMs === null ? 'n/a (Node < 22.19)' : `${main.leader.loopOwnMaxMs} ms`,
      main.leader.loopOwnMaxMs === null ? null : main.leader.loopOwnMaxMs <= 50],
  ];
}

async function main(): Promise<void> {
  if (!existsSync(HOST)) throw new Error(`${HOST} is missing: run 'npm run build' first`);
  const o = options();
  // Measured before anything runs: the fleet's own stalls are partly this machine's page faults (on-cpu-stalls.ts).
  const touchUs = firstTouchUs();
  const started = Date.now();
  const runs: RunParams[] = [];
  const compactions = o.compaction === 'both' ? [false, true] : [o.compaction === 'on'];
  if (o.baselineSplits > 0 && o.baselineSplits !== o.splits) {
    runs.push({ label: `${short(o.baselineSplits)} baseline`, splits: o.baselineSplits, durationS: o.baselineDurationS, compaction: compactions[0]! });
  }
  for (const c of compactions) runs.push({ label: `${short(o.splits)}${compactions.length > 1 ? `, compaction ${c ? 'on' : 'off'}` : ''}`, splits: o.splits, durationS: o.durationS, compaction: c });
  const results: Figures[] = [];
  for (const run of runs) results.push(await runFleet(o, run));
  const mainRun = results.find((r) => r.splits === o.splits)!;
  const base = results.find((r) => r.splits !== o.splits);
  const rat = ratios(mainRun, base);
  const tg = targets(mainRun, base, rat);
  const out = [
    '',
    `## Fleet at scale: ${o.splits.toLocaleString('en')} splits, ${o.members} members in ${o.hosts} processes, ${o.lanes} lanes, ` +
      `${o.handlerMs / 1000} s handlers committing every ${o.commitEveryMs} ms (${cpus().length} CPUs, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `a page's first touch ${touchUs} µs, Node ${process.version})`,
    '',
    table(results),
    '',
    ...(rat ? [`Ratios (${rat.of}): probe RSS ${rat.probeRss}×, start-up ${rat.probeStartup}× (its CPU ${rat.probeStartupCpu}×), CPU ${rat.probeCpu}×, watch events ${rat.probeWatchEvents}×; leader RSS ${rat.leaderRssPerSplitKiB} KiB per split`, ''] : []),
    '| target | figure | met |',
    '|---|---|---|',
    ...tg.map(([name, fig, met]) => `| ${name} | ${fig} | ${met === null ? '–' : met ? 'yes' : '**no**'} |`),
    '',
  ].join('\n');
  process.stdout.write(`${out}\n`);
  const summary = {
    options: { ...o, knobs: { ...CONFIG_DEFAULTS, ...o.knobs, maxInFlight: o.lanes, layout: o.layout } },
    machine: { cpus: cpus().length, memGiB: round(totalmem() / 2 ** 30), freeGiB: round(freemem() / 2 ** 30), firstTouchUs: touchUs, node: process.version },
    wallS: round((Date.now() - started) / 1000),
    runs: results, ratios: rat ?? null,
    targets: Object.fromEntries(tg.map(([name, fig, met]) => [name, { figure: fig, met }])),
  };
  if (o.json) writeFileSync(o.json, `${JSON.stringify(summary, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

main().then(() => process.exit(0), (e) => {
  log(String((e as Error)?.stack ?? e));
  process.exit(1);
});
