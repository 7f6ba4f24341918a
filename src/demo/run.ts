/**
 * `splitfleet demo`'s engine: one bounded synthetic job, end to end. It
 * starts W members (in process on the MemoryStore, or one OS process each on
 * etcd), watches the job like an operator would (observer.ts), applies the
 * requested chaos at fixed points of progress, draws the live view or plain
 * progress lines, and at the end checks the ledger: every planned unit of
 * every completed split processed at least once.
 *
 * Chaos points, by the fraction of units processed: kills at 25 %, stalls at
 * 30 %, the leader's kill at 40 %, joins at 50 %. A stall lasts one lease
 * plus two seconds, so the fleet sees the member as gone and it wakes fenced.
 *
 * It decides nothing about the job (the coordinators do) and never writes to
 * the store itself.
 */
import { syntheticSplits } from '../testing/synthetic.js';
import { MemoryFleet, ProcessFleet, type DemoJobSettings, type Fleet, type FleetSink, type LaneEvent } from './fleet.js';
import { Ledger } from '../testing/ledger.js';
import { JobObserver, type Narrative } from './observer.js';
import { splitStatus } from '../inspect/packed-records.js';
import { frame, MiB, narrativeLine, paint, progressLine, seconds, type FrameState } from './view.js';

export interface DemoOptions {
  workers: number;
  splits: number;
  lanes: number;
  /** Units per second per lane. */
  rate: number;
  seed: number;
  commitEvery: number;
  rebalanceDelayMs: number;
  drainDeadlineMs: number;
  kill: number;
  join: number;
  stall: number;
  killLeader: boolean;
  poison: number;
  /** The layout the job is created with (decision 0037): 'keys' (two records a split) or 'packed' (queue pages). */
  layout: 'keys' | 'packed';
  /** etcd client URLs; absent: the embedded MemoryStore. */
  etcd?: string[];
  job?: string;
  root: string;
  timeoutMs: number;
  /** Draw the live view (a terminal); otherwise plain lines. */
  live: boolean;
  color: boolean;
  /** Terminal width for the live view. */
  columns?: number;
}

/** The demo's short protocol timings (production defaults are 30 s, 10 s, 20 s, 10 s, 30 s). */
export const DEMO_TIMINGS = Object.freeze({
  // 5 s, not 3: a session rides out the election that losing the etcd cluster's leader member
  // costs (1.5–2 s without any leader on etcd's defaults), which a 3 s lease could not (decision 0034).
  leaseDurationMs: 5000,
  opTimeoutMs: 1000,
  rebalanceDelayMs: 2000,
  drainDeadlineMs: 2000,
  reconcileIntervalMs: 5000,
});

export interface DemoSummary {
  planned: number;
  completed: number;
  quarantined: number;
  /** Records this build could not read (each sets aside only what it concerns): `key: problem`. */
  unreadable: string[];
  lost: number;
  duplicates: number;
  cooperativeRevocations: number;
  forcedRevocations: number;
  leaderChanges: number;
  durationMs: number;
  maxImbalance: number;
  verdict: 'complete' | 'stalled' | 'interrupted';
  units: number;
  processed: number;
  moves: number;
  job: string;
  store: 'memory' | 'etcd';
  /** The layout the job's plan record says it has (decision 0037), as the observer read it. */
  layout: 'keys' | 'packed';
}

export interface DemoOutput {
  write(text: string): void;
}

const CHAOS_AT = { kill: 0.25, stall: 0.3, killLeader: 0.4, join: 0.5 } as const;

/** What the steps of one run share: the verdict once there is one, and what the view and the summary count. */
interface DemoRun {
  verdict: DemoSummary['verdict'] | undefined;
  /**
   * Cooperative revocations, counted from the handler's own 'drained' events: the coordinator's
   * counter also counts a lane that completes while the final stop() is draining it.
   */
  drained: number;
  revocations: { cooperative: number; forced: number };
  /** Applies the chaos due at the current progress; a no-op until the members are started. */
  chaosCheck: () => void;
}

/** Runs the demo; resolves with its summary. Rejects only when the fleet cannot start. */
export async function runDemo(o: DemoOptions, out: DemoOutput, signal?: AbortSignal): Promise<DemoSummary> {
  const started = Date.now();
  const job = o.job ?? (o.etcd ? `demo-${started.toString(36)}` : 'demo');
  const splits = syntheticSplits({ splits: o.splits, seed: o.seed });
  const settings = demoSettings(o, job, splits);
  const p = paint(o.color);
  const ledger = new Ledger(splits);
  const recent: Narrative[] = [];
  const run: DemoRun = { verdict: undefined, drained: 0, revocations: { cooperative: 0, forced: 0 }, chaosCheck: () => undefined };
  const sink = demoSink(splits, ledger, run, (kind, text) => observer.tell(kind, text));
  const fleet: Fleet = o.etcd ? await ProcessFleet.open(o.etcd, settings, sink) : new MemoryFleet(settings, sink);
  const observer = new JobObserver(fleet.store, o.root, job, started);
  const where = o.etcd ? `etcd ${o.etcd.join(',')}` : 'memory store';
  const title = `job ${job} · ${where} · ${o.workers} workers × ${o.lanes} lanes · ${o.splits} splits${o.layout === 'packed' ? ' (packed)' : ''} · ${o.rate} units/s/lane`;

  const state = (): FrameState => ({
    elapsedMs: Date.now() - started,
    title,
    report: observer.report(),
    members: fleet.members(),
    lanes: o.lanes,
    unitsProcessed: ledger.processed,
    units: ledger.plannedUnits,
    leaderChanges: observer.leaderChanges,
    moves: observer.moves,
    revocations: run.revocations,
    recent,
    unitWeight: MiB,
    unitName: 'MiB',
  });
  const view = liveView(o, out, p, state);

  let next = 1;
  const nextName = () => `w${next++}`;
  const onAbort = () => {
    run.verdict ??= 'interrupted';
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  try {
    await startObserver(o, out, p, observer, recent, title, job);
    const initial = Array.from({ length: o.workers }, nextName);
    if (fleet.kind === 'etcd') {
      await Promise.all(initial.map((name) => fleet.start(name)));
    } else {
      for (const name of initial) await fleet.start(name);
    }
    run.chaosCheck = chaosByProgress(o, fleet, observer, ledger, nextName, run);
    await tickUntilVerdict(o, out, fleet, observer, run, started, view.draw, state);

    const durationMs = Date.now() - started;
    await fleet.finish(run.verdict === 'complete' || run.verdict === 'stalled' ? 15_000 : 0);
    run.revocations = { cooperative: run.drained, forced: (await fleet.revocations()).forced };
    const report = observer.report();
    if (o.live) {
      view.draw();
      out.write('\x1b[?25h');
    }
    // A packed job's completed split may be folded back into its page, its record gone: its page says so.
    const check = ledger.check((id) => splitStatus(observer.records, id));
    const summary = demoSummary(o, job, fleet, observer, report, check, run, durationMs);
    writeEnding(out, p, check, summary);
    return summary;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (o.live && view.drawn() > 0) out.write('\x1b[?25h');
    await observer.close().catch(() => undefined);
    await fleet.close().catch(() => undefined);
  }
}

/** The job the fleet's members run: the demo's options, its short timings, and the last `poison` splits set to fail. */
function demoSettings(o: DemoOptions, job: string, splits: ReturnType<typeof syntheticSplits>): DemoJobSettings {
  const poison = splits.slice(splits.length - o.poison).map((s) => s.id);
  return {
    job,
    root: o.root,
    splits: o.splits,
    seed: o.seed,
    lanes: o.lanes,
    unitMs: 1000 / o.rate,
    commitEvery: o.commitEvery,
    config: { ...DEMO_TIMINGS, rebalanceDelayMs: o.rebalanceDelayMs, drainDeadlineMs: o.drainDeadlineMs },
    poison,
    layout: o.layout,
  };
}

/** What the members report: units into the ledger (then the chaos due), lane events into the narrative. */
function demoSink(splits: ReturnType<typeof syntheticSplits>, ledger: Ledger, run: DemoRun, tell: JobObserver['tell']): FleetSink {
  return {
    unit: (id, unit) => {
      ledger.record(id, unit);
      run.chaosCheck();
    },
    lane: (instance, e: LaneEvent) => {
      const units = splits.find((s) => s.id === e.id)?.units;
      if (e.ev === 'drained') run.drained++;
      if (e.ev === 'drained') tell('drain', `${instance} drained ${e.id} at ${String(e.progress)}/${units} and released it`);
      if (e.ev === 'declined') tell('drain', `${instance} declined to drain ${e.id}: forced release at ${String(e.progress)}`);
      if (e.ev === 'failed') tell('note', `${e.id} failed on ${instance} (attempt ${String(e.attempts)})`);
    },
    note: (text) => tell('note', text),
  };
}

/** The live view: each frame redrawn over the last (`drawn` lines up), the cursor hidden while it runs. */
function liveView(o: DemoOptions, out: DemoOutput, p: ReturnType<typeof paint>, state: () => FrameState): { draw: () => void; drawn: () => number } {
  let drawn = 0;
  const draw = () => {
    const lines = frame(state(), Math.max(40, (o.columns ?? 100) - 1), p);
    let text = drawn > 0 ? `\x1b[${drawn}F` : '\x1b[?25l';
    for (const l of lines) text += `\x1b[2K${l}\n`;
    text += '\x1b[J';
    drawn = lines.length;
    out.write(text);
  };
  return { draw, drawn: () => drawn };
}

/** Starts watching the job, keeps the recent narrative (printed as it comes without the live view), and prints the title. */
async function startObserver(
  o: DemoOptions, out: DemoOutput, p: ReturnType<typeof paint>, observer: JobObserver, recent: Narrative[], title: string, job: string,
): Promise<void> {
  try {
    await observer.start();
  } catch (e) {
    throw new Error(o.etcd ? `--etcd: cannot read the job from ${o.etcd.join(',')}: ${(e as Error).message}` : (e as Error).message, { cause: e });
  }
  observer.onNarrative((n) => {
    recent.push(n);
    if (recent.length > 50) recent.shift();
    if (!o.live) out.write(`${narrativeLine(n, p)}\n`);
  });
  if (!o.live) out.write(`splitfleet demo: ${title}\n`);
  if (o.etcd && !o.live) out.write(`inspect it with: splitfleet inspect --etcd ${o.etcd[0]} --job ${job}${o.root !== 'splitfleet' ? ` --root ${o.root}` : ''}\n`);
}

/** The chaos check run after each unit: each kind of chaos once, when progress reaches its point (CHAOS_AT), and none after the verdict. */
function chaosByProgress(o: DemoOptions, fleet: Fleet, observer: JobObserver, ledger: Ledger, nextName: () => string, run: DemoRun): () => void {
  const done = { kill: o.kill === 0, stall: o.stall === 0, killLeader: !o.killLeader, join: o.join === 0 };
  const victims = (n: number) => fleet.members()
    .filter((m) => m.state === 'running' && m.instance !== observer.leader)
    .slice(0, n)
    .map((m) => m.instance);
  return () => {
    if (run.verdict) return;
    const fraction = ledger.processed / ledger.plannedUnits;
    if (!done.kill && fraction >= CHAOS_AT.kill) {
      done.kill = true;
      for (const name of victims(o.kill)) {
        fleet.kill(name);
        observer.tell('chaos', o.etcd ? `SIGKILL ${name}` : `crashed ${name} (no release, no revoke: its lease must expire)`);
      }
    }
    if (!done.stall && fraction >= CHAOS_AT.stall) {
      done.stall = true;
      const ms = DEMO_TIMINGS.leaseDurationMs + 2000;
      for (const name of victims(o.stall)) {
        fleet.stall(name, ms);
        observer.tell('chaos', `${o.etcd ? 'SIGSTOP' : 'paused'} ${name} for ${ms / 1000} s`);
        setTimeout(() => observer.tell('chaos', `${o.etcd ? 'SIGCONT' : 'resumed'} ${name}`), ms);
      }
    }
    if (!done.killLeader && fraction >= CHAOS_AT.killLeader && observer.leader !== undefined) {
      done.killLeader = true;
      const leader = observer.leader;
      fleet.kill(leader);
      observer.tell('chaos', `${o.etcd ? 'SIGKILL' : 'crashed'} the leader, ${leader}`);
    }
    if (!done.join && fraction >= CHAOS_AT.join) {
      done.join = true;
      for (let i = 0; i < o.join; i++) {
        const name = nextName();
        observer.tell('chaos', `starting ${name}`);
        fleet.start(name).catch((e: unknown) => observer.tell('note', `${name} could not start: ${(e as Error).message}`));
      }
    }
  };
}

/** The clock of the run, every 100 ms until there is a verdict: the view or a progress line every 2 s, the verdict, the timeout. */
async function tickUntilVerdict(
  o: DemoOptions, out: DemoOutput, fleet: Fleet, observer: JobObserver, run: DemoRun, started: number, draw: () => void, state: () => FrameState,
): Promise<void> {
  let lastPlain = 0;
  let ticker: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve) => {
      let busy = false;
      ticker = setInterval(() => {
        if (busy) return;
        busy = true;
        void (async () => {
          try {
            run.revocations = { cooperative: run.drained, forced: (await fleet.revocations()).forced };
            observer.sample();
            const report = observer.report();
            if (!run.verdict && report.progress.verdict !== null) run.verdict = report.progress.verdict;
            if (!run.verdict && Date.now() - started > o.timeoutMs) {
              run.verdict = 'stalled';
              observer.tell('note', `no verdict after ${o.timeoutMs / 1000} s: the job is stalled`);
            }
            if (o.live) draw();
            else if (Date.now() - lastPlain >= 2000 || run.verdict) {
              lastPlain = Date.now();
              out.write(`${progressLine(state())}\n`);
            }
            if (run.verdict) {
              observer.freeze();
              resolve();
            }
          } finally {
            busy = false;
          }
        })();
      }, 100);
    });
  } finally {
    clearInterval(ticker);
  }
}

/** The run's outcome from the job's final report and the ledger's check. */
function demoSummary(
  o: DemoOptions, job: string, fleet: Fleet, observer: JobObserver, report: ReturnType<JobObserver['report']>,
  check: ReturnType<Ledger['check']>, run: DemoRun, durationMs: number,
): DemoSummary {
  return {
    planned: report.plan?.planned ?? o.splits,
    completed: report.splits.completed,
    quarantined: report.splits.quarantined,
    unreadable: [...report.problems],
    lost: check.lost,
    duplicates: check.duplicates,
    cooperativeRevocations: run.revocations.cooperative,
    forcedRevocations: run.revocations.forced,
    leaderChanges: observer.leaderChanges,
    durationMs,
    maxImbalance: Math.round(observer.maxImbalance * 1000) / 1000,
    verdict: run.verdict ?? 'interrupted',
    units: check.units,
    processed: check.processed,
    moves: observer.moves,
    job,
    store: fleet.kind,
    layout: report.plan?.layout ?? 'keys',
  };
}

/** The closing lines: the ledger's check, then the verdict and the run's counts. */
function writeEnding(out: DemoOutput, p: ReturnType<typeof paint>, check: ReturnType<Ledger['check']>, summary: DemoSummary): void {
  out.write(`\n${p('bold', 'ledger')}   ${check.processed}/${check.units} units processed at least once, `
    + `${check.lost === 0 ? p('green', '0 lost') : p('red', `${check.lost} LOST (${check.examples.join(', ')})`)}\n`
    + `         ${check.duplicates} duplicates (units replayed after takeovers and forced revocations)\n`
    + `${check.unfinished > 0 ? `         ${check.unfinished} units never processed (the job did not finish)\n` : ''}`);
  const verdictText = summary.verdict === 'complete'
    ? p('green', 'complete')
    : summary.verdict === 'stalled'
      ? p('red', `stalled${summary.quarantined > 0 ? ` (${summary.quarantined} quarantined)` : ''}${summary.unreadable.length > 0 ? ` (${summary.unreadable.length} unreadable)` : ''}`)
      : p('yellow', 'interrupted');
  out.write(`${p('bold', 'verdict')}  ${verdictText} in ${seconds(summary.durationMs).trim()}: ${summary.completed}/${summary.planned} splits completed, `
    + `${summary.quarantined} quarantined\n`
    + summary.unreadable.slice(0, 5).map((line) => `         ${p('red', 'unreadable')} ${line}\n`).join('')
    + `         ${summary.moves} moves, ${summary.cooperativeRevocations} cooperative and ${summary.forcedRevocations} forced revocations, `
    + `${summary.leaderChanges} leader changes\n`
    + `         worst imbalance of a published assignment ${summary.maxImbalance.toFixed(3)} (max load / its lower bound)\n`);
}
