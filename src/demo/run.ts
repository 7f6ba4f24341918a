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
}

export interface DemoOutput {
  write(text: string): void;
}

const CHAOS_AT = { kill: 0.25, stall: 0.3, killLeader: 0.4, join: 0.5 } as const;

/** Runs the demo; resolves with its summary. Rejects only when the fleet cannot start. */
export async function runDemo(o: DemoOptions, out: DemoOutput, signal?: AbortSignal): Promise<DemoSummary> {
  const started = Date.now();
  const job = o.job ?? (o.etcd ? `demo-${started.toString(36)}` : 'demo');
  const splits = syntheticSplits({ splits: o.splits, seed: o.seed });
  const poison = splits.slice(splits.length - o.poison).map((s) => s.id);
  const settings: DemoJobSettings = {
    job,
    root: o.root,
    splits: o.splits,
    seed: o.seed,
    lanes: o.lanes,
    unitMs: 1000 / o.rate,
    commitEvery: o.commitEvery,
    config: { ...DEMO_TIMINGS, rebalanceDelayMs: o.rebalanceDelayMs, drainDeadlineMs: o.drainDeadlineMs },
    poison,
  };
  const p = paint(o.color);
  const ledger = new Ledger(splits);
  const recent: Narrative[] = [];
  let chaosCheck = () => undefined as void;
  // Cooperative revocations are counted from the handler's own 'drained' events: the coordinator's
  // counter also counts a lane that completes while the final stop() is draining it.
  let drained = 0;

  const sink: FleetSink = {
    unit: (id, unit) => {
      ledger.record(id, unit);
      chaosCheck();
    },
    lane: (instance, e: LaneEvent) => {
      const units = splits.find((s) => s.id === e.id)?.units;
      if (e.ev === 'drained') drained++;
      if (e.ev === 'drained') observer.tell('drain', `${instance} drained ${e.id} at ${String(e.progress)}/${units} and released it`);
      if (e.ev === 'declined') observer.tell('drain', `${instance} declined to drain ${e.id}: forced release at ${String(e.progress)}`);
      if (e.ev === 'failed') observer.tell('note', `${e.id} failed on ${instance} (attempt ${String(e.attempts)})`);
    },
    note: (text) => observer.tell('note', text),
  };
  const fleet: Fleet = o.etcd ? new ProcessFleet(o.etcd, settings, sink) : new MemoryFleet(settings, sink);
  const observer = new JobObserver(fleet.store, o.root, job, started);
  const where = o.etcd ? `etcd ${o.etcd.join(',')}` : 'memory store';
  const title = `job ${job} · ${where} · ${o.workers} workers × ${o.lanes} lanes · ${o.splits} splits · ${o.rate} units/s/lane`;

  let revocations = { cooperative: 0, forced: 0 };
  let drawn = 0;
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
    revocations,
    recent,
    unitWeight: MiB,
    unitName: 'MiB',
  });
  const draw = () => {
    const lines = frame(state(), Math.max(40, (o.columns ?? 100) - 1), p);
    let text = drawn > 0 ? `\x1b[${drawn}F` : '\x1b[?25l';
    for (const l of lines) text += `\x1b[2K${l}\n`;
    text += '\x1b[J';
    drawn = lines.length;
    out.write(text);
  };

  let next = 1;
  const nextName = () => `w${next++}`;
  let verdict: DemoSummary['verdict'] | undefined;
  let ticker: NodeJS.Timeout | undefined;
  const onAbort = () => {
    verdict ??= 'interrupted';
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  try {
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
    const initial = Array.from({ length: o.workers }, nextName);
    if (fleet.kind === 'etcd') {
      await Promise.all(initial.map((name) => fleet.start(name)));
    } else {
      for (const name of initial) await fleet.start(name);
    }

    // Chaos, by progress.
    const done = { kill: o.kill === 0, stall: o.stall === 0, killLeader: !o.killLeader, join: o.join === 0 };
    const victims = (n: number) => fleet.members()
      .filter((m) => m.state === 'running' && m.instance !== observer.leader)
      .slice(0, n)
      .map((m) => m.instance);
    chaosCheck = () => {
      if (verdict) return;
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

    // The clock of the run: view, verdict, timeout.
    let lastPlain = 0;
    await new Promise<void>((resolve) => {
      let busy = false;
      ticker = setInterval(() => {
        if (busy) return;
        busy = true;
        void (async () => {
          try {
            revocations = { cooperative: drained, forced: (await fleet.revocations()).forced };
            observer.sample();
            const report = observer.report();
            if (!verdict && report.progress.verdict !== null) verdict = report.progress.verdict;
            if (!verdict && Date.now() - started > o.timeoutMs) {
              verdict = 'stalled';
              observer.tell('note', `no verdict after ${o.timeoutMs / 1000} s: the job is stalled`);
            }
            if (o.live) draw();
            else if (Date.now() - lastPlain >= 2000 || verdict) {
              lastPlain = Date.now();
              out.write(`${progressLine(state())}\n`);
            }
            if (verdict) {
              observer.freeze();
              resolve();
            }
          } finally {
            busy = false;
          }
        })();
      }, 100);
    });
    clearInterval(ticker);

    const durationMs = Date.now() - started;
    await fleet.finish(verdict === 'complete' || verdict === 'stalled' ? 15_000 : 0);
    revocations = { cooperative: drained, forced: (await fleet.revocations()).forced };
    const report = observer.report();
    if (o.live) {
      draw();
      out.write('\x1b[?25h');
    }
    const statusOf = (id: string) => observer.records.splits.get(id)?.status;
    const check = ledger.check(statusOf);
    const summary: DemoSummary = {
      planned: report.plan?.planned ?? o.splits,
      completed: report.splits.completed,
      quarantined: report.splits.quarantined,
      unreadable: [...report.problems],
      lost: check.lost,
      duplicates: check.duplicates,
      cooperativeRevocations: revocations.cooperative,
      forcedRevocations: revocations.forced,
      leaderChanges: observer.leaderChanges,
      durationMs,
      maxImbalance: Math.round(observer.maxImbalance * 1000) / 1000,
      verdict: verdict ?? 'interrupted',
      units: check.units,
      processed: check.processed,
      moves: observer.moves,
      job,
      store: fleet.kind,
    };
    out.write(`\n${p('bold', 'ledger')}   ${check.processed}/${check.units} units processed at least once, `
      + `${check.lost === 0 ? p('green', '0 lost') : p('red', `${check.lost} LOST (${check.examples.join(', ')})`)}\n`
      + `         ${check.duplicates} duplicates (units replayed after takeovers and forced revocations)\n`
      + `${check.unfinished > 0 ? `         ${check.unfinished} units never processed (the job did not finish)\n` : ''}`);
    const verdictText = summary.verdict === 'complete'
      ? p('green', 'complete')
      : summary.verdict === 'stalled'
        ? p('red', `stalled${summary.quarantined > 0 ? ` (${summary.quarantined} quarantined)` : ''}${summary.unreadable.length > 0 ? ` (${summary.unreadable.length} unreadable)` : ''}`)
        : p('yellow', 'interrupted');
    out.write(`${p('bold', 'verdict')}  ${verdictText} in ${seconds(durationMs).trim()}: ${summary.completed}/${summary.planned} splits completed, `
      + `${summary.quarantined} quarantined\n`
      + summary.unreadable.slice(0, 5).map((line) => `         ${p('red', 'unreadable')} ${line}\n`).join('')
      + `         ${summary.moves} moves, ${summary.cooperativeRevocations} cooperative and ${summary.forcedRevocations} forced revocations, `
      + `${summary.leaderChanges} leader changes\n`
      + `         worst imbalance of a published assignment ${summary.maxImbalance.toFixed(3)} (max load / its lower bound)\n`);
    return summary;
  } finally {
    clearInterval(ticker);
    signal?.removeEventListener('abort', onAbort);
    if (o.live && drawn > 0) out.write('\x1b[?25h');
    await observer.close().catch(() => undefined);
    await fleet.close().catch(() => undefined);
  }
}
