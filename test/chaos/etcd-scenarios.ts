/**
 * Chaos against etcd itself and the clocks beneath the fleet (issue 49, item
 * 4), run by `npm run chaos:etcd` (etcd-chaos.slow.ts), not by `npm test`:
 * each takes about a minute on two cores. Same runner, auditor and history
 * check as scenarios.ts; the faults come from faults.ts.
 *
 * - `etcd-member-isolated`: a 3-member cluster whose last member runs in a
 *   network namespace; its peer link is cut (first while it is the raft
 *   leader, then as a follower) for longer than the lease; w0 and w1 are
 *   pinned to it (their only endpoint), the others know all three.
 * - `etcd-member-isolated-pre-vote`: the same with the members started with
 *   `--pre-vote` (docs/operations.md's recommendation on etcd 3.4): the
 *   members that know every endpoint must lose no session at all.
 * - `etcd-fsync-stall`: a 3-member cluster; every fsync of the raft leader,
 *   then of all three members at once, stalls for longer than the lease.
 * - `worker-clock-steps`: each member's wall clock (Date.now, new Date) is
 *   stepped forward and back by seconds to an hour, the leader's among them.
 *
 * Expected of each (besides the suite's own checks: nothing lost, the
 * fence, the history check): no split is ever quarantined; a session is
 * lost for no longer than one election (`sessionBoundMs` after the fault
 * that cost it ends); the clock steps cost no session and no takeover.
 */
import type { HistoryEvent } from '../support/history.js';
import { ClockShim, stallFsync } from './faults.js';
import { NAMES, SOAK, baseSettings, type Scenario, type ScenarioContext } from './scenarios.js';
import { sleep, type ChaosRun } from './runner.js';

/** Longer schedules under CHAOS_SOAK=1. */
const scale = (n: number) => (SOAK ? n * 2 : n);

/** etcd's election timeout (its default, which cluster.ts keeps) plus a renewal's and a rejoin's slack. */
const ELECTION_MS = 1000;
export const sessionBoundMs = (leaseMs: number) => leaseMs + ELECTION_MS + 1000;

/** A fault's window in the recorder's time (Date.now of this process), and whom it may cost a session. */
export interface FaultWindow { from: number; to: number; victims: 'all' | string[]; what: string }

/** Presence-key gaps: an instance's presence deleted (its session lost or ended) until put again. */
export function presenceGaps(history: readonly HistoryEvent[]): { instance: string; from: number; to: number | undefined }[] {
  const open = new Map<string, number>();
  const gaps: { instance: string; from: number; to: number | undefined }[] = [];
  for (const e of history) {
    if (e.kind !== 'worker' || !e.id) continue;
    if (e.type === 'delete') open.set(e.id, e.at);
    else if (open.has(e.id)) {
      gaps.push({ instance: e.id, from: open.get(e.id)!, to: e.at });
      open.delete(e.id);
    }
  }
  for (const [instance, from] of open) gaps.push({ instance, from, to: undefined });
  return gaps;
}

/**
 * Sessions lost for longer than one election: every presence gap that begins
 * before the job's verdict must end within `boundMs`, counted from the end of
 * the last fault window that covers its start and names its instance (a cut
 * member's pinned clients cannot rejoin before the cut heals).
 */
export function longSessionLosses(history: readonly HistoryEvent[], windows: readonly FaultWindow[], boundMs: number, endAt: number): string[] {
  const out: string[] = [];
  for (const g of presenceGaps(history)) {
    if (g.from >= endAt) continue; // members leaving after the verdict
    const covering = windows.filter((w) => (w.victims === 'all' || w.victims.includes(g.instance)) && g.from >= w.from - boundMs && g.from <= w.to);
    const start = Math.max(g.from, ...covering.map((w) => w.to));
    const to = g.to ?? endAt;
    if (to - start > boundMs) {
      out.push(`${g.instance} was without a session for ${to - g.from} ms (${to - start} ms after ${covering.length ? `the fault "${covering.at(-1)!.what}" ended` : 'it lost it, no fault covering it'}; bound ${boundMs} ms)`);
    }
  }
  return out;
}

/** The first revision's receive time of the job's verdict: the last split record written. */
function verdictAt(history: readonly HistoryEvent[]): number {
  let at = 0;
  for (const e of history) if (e.kind === 'split' || e.kind === 'folded' || e.kind === 'result') at = Math.max(at, e.at);
  return at;
}

/** Splits ever written as quarantined (none is unhealthy in these scenarios: every handler succeeds). */
export function quarantined(history: readonly HistoryEvent[]): string[] {
  const ids = new Set<string>();
  for (const e of history) if (e.type === 'put' && e.rec?.status === 'quarantined') ids.add(e.id ?? e.key);
  return [...ids].sort();
}

const windowsOf = new WeakMap<ChaosRun, FaultWindow[]>();
const windows = (run: ChaosRun): FaultWindow[] => {
  let w = windowsOf.get(run);
  if (!w) windowsOf.set(run, (w = []));
  return w;
};

/** The common expectation: no quarantine, no session lost past the bound. */
function expectHealthy(ctx: ScenarioContext): string | undefined {
  const history = ctx.run.auditor.history;
  const q = quarantined(history);
  if (q.length > 0) return `healthy splits quarantined: ${q.join(', ')}`;
  const long = longSessionLosses(history, windows(ctx.run), sessionBoundMs(ctx.run.settings.knobs.leaseDurationMs!), verdictAt(history));
  return long.length > 0 ? `sessions lost for longer than one election:\n  ${long.join('\n  ')}` : undefined;
}

/** Sessions lost (presence gaps before the verdict) and the longest, for the results line. */
function sessionSummary(ctx: ScenarioContext): string {
  const history = ctx.run.auditor.history;
  const end = verdictAt(history);
  const lost = presenceGaps(history).filter((g) => g.from < end);
  const gaps = lost.map((g) => (g.to ?? end) - g.from);
  const by = new Map<string, number>();
  for (const g of lost) by.set(g.instance, (by.get(g.instance) ?? 0) + 1);
  const who = [...by].sort().map(([i, n]) => `${i} ${n}`).join(', ');
  // Why, as the members said it ('session-lost' events): a lease etcd no longer has, or renewals unconfirmed.
  const why = new Map<string, number>();
  for (const m of ctx.run.incarnations) {
    for (const e of m.eventsOf('session-lost')) {
      const r = String(e.reason).replace(/\d+/g, 'N');
      why.set(r, (why.get(r) ?? 0) + 1);
    }
  }
  const reasons = [...why].map(([r, n]) => `${n}× "${r}"`).join('; ');
  return `sessions lost ${gaps.length}${who ? ` (${who})` : ''}, longest ${gaps.length ? Math.max(...gaps) : 0} ms (bound ${sessionBoundMs(ctx.run.settings.knobs.leaseDurationMs!)} ms after a fault)${reasons ? `; members said ${reasons}` : ''}`;
}

const PINNED = ['w0', 'w1'];
let shim: ClockShim | undefined;

/**
 * The unpinned members (they know all three endpoints) lose no session at all: with pre-vote, a
 * healed member cannot force an election, and a cut-off leader's clients move to the others.
 */
function unpinnedKeepSessions(ctx: ScenarioContext): string | undefined {
  const history = ctx.run.auditor.history;
  const end = verdictAt(history);
  const lost = presenceGaps(history).filter((g) => g.from < end && !PINNED.includes(g.instance));
  return lost.length > 0 ? `with pre-vote, members that know every endpoint lost ${lost.length} session(s): ${lost.map((g) => `${g.instance} at +${g.from - (history[0]?.at ?? 0)} ms`).join(', ')}` : undefined;
}

/**
 * The last member cut off from its peers, first while it leads the cluster, then as a follower;
 * w0 and w1 pinned to it. With `preVote` the members run as docs/operations.md recommends, and the
 * unpinned members must keep every session.
 */
function isolatedMember(name: string, preVote: boolean): Scenario {
  return {
    name,
    topology: 'cluster',
    isolate: true,
    ...(preVote ? { preVote: true } : {}),
    settings: (seed) => baseSettings(seed, {}, { leaseDurationMs: 3000, opTimeoutMs: 1000 }),
    endpointsFor: (instance, { cluster }) => (PINNED.includes(instance) ? [cluster!.members[2]!.clientUrl] : undefined),
    chaos: ({ run, cluster, isolation }) => run.schedule({
      minGap: 1500, maxGap: 3000, maxFaults: scale(2), budgetMs: scale(40_000),
      step: async () => {
        // First while the cut-off member leads the cluster (leadership moved to it), then as a follower.
        const leading = run.faults % 2 === 0 ? await cluster!.moveLeader(2) : false;
        if (run.faults % 2 === 1 && (await cluster!.leaderIndex()) === 2) await cluster!.moveLeader(0);
        const lease = run.settings.knobs.leaseDurationMs!;
        const hold = run.between(lease + 1000, lease + 3000);
        const from = Date.now();
        run.fault(`cut m2${leading ? ' (raft leader)' : ''} off from its peers for ${hold} ms (pinned: ${PINNED.join(', ')})`);
        isolation!.cut();
        await sleep(hold);
        isolation!.heal();
        windows(run).push({ from, to: Date.now(), victims: PINNED, what: `m2 cut off for ${hold} ms` });
        run.note(`m2's peer link is up again; raft leader m${await cluster!.leaderIndex()}`);
      },
    }),
    expectRun: preVote ? (ctx) => expectHealthy(ctx) ?? unpinnedKeepSessions(ctx) : expectHealthy,
    summary: sessionSummary,
  };
}

export const ETCD_SCENARIOS: Scenario[] = [
  isolatedMember('etcd-member-isolated', false),
  isolatedMember('etcd-member-isolated-pre-vote', true),
  {
    name: 'etcd-fsync-stall',
    topology: 'cluster',
    settings: (seed) => baseSettings(seed, {}, { leaseDurationMs: 3000, opTimeoutMs: 1000 }),
    chaos: ({ run, cluster }) => run.schedule({
      minGap: 1500, maxGap: 3000, maxFaults: scale(2), budgetMs: scale(40_000),
      step: async () => {
        // First the raft leader's disk, then every member's at once (the cluster cannot commit at all).
        const lease = run.settings.knobs.leaseDurationMs!;
        const delay = lease + 1000;
        const leader = await cluster!.leaderIndex();
        const targets = run.faults % 2 === 0 && leader !== undefined ? [leader] : [0, 1, 2];
        const from = Date.now();
        run.fault(`every fsync of ${targets.map((i) => `m${i}${i === leader ? ' (raft leader)' : ''}`).join(', ')} stalls ${delay} ms, for ${delay + 500} ms`);
        const stalls = await Promise.all(targets.map((i) => stallFsync(cluster!.pid(i)!, delay)));
        await sleep(delay + 500);
        await Promise.all(stalls.map((s) => s.stop()));
        // A call sent during the stall waits out its fsync: the window ends when the last delayed one may return.
        windows(run).push({ from, to: Date.now() + delay, victims: 'all', what: `fsync stalled on ${targets.map((i) => `m${i}`).join(', ')}` });
        run.note(`strace detached; raft leader m${await cluster!.leaderIndex()}`);
      },
    }),
    expectRun: expectHealthy,
    summary: sessionSummary,
  },
  {
    name: 'worker-clock-steps',
    topology: 'shared',
    settings: (seed) => baseSettings(seed),
    start: async ({ run }) => {
      shim ??= new ClockShim();
      for (const name of NAMES) run.spawn(name, { env: shim.env(`${run.job}-${name}`) });
    },
    chaos: ({ run }) => run.schedule({
      minGap: 600, maxGap: 1500, maxFaults: scale(8), budgetMs: scale(25_000),
      step: async () => {
        // Every other step on the leader; a step stays until a later one (NTP) moves that clock again.
        const leader = run.auditor.leaderInstance;
        const victim = run.faults % 2 === 0 && leader ? leader : run.pick(run.live);
        if (!victim) return;
        const lease = run.settings.knobs.leaseDurationMs!;
        const steps = [3_600_000, -3_600_000, 600_000, -600_000, 5 * lease, -5 * lease, 0];
        const offset = steps[run.between(0, steps.length - 1)]!;
        run.fault(`${victim}'s wall clock ${offset === 0 ? 'set right' : `stepped to real ${offset > 0 ? '+' : ''}${offset / 1000} s`}${victim === leader ? ' (the leader)' : ''}`);
        shim!.set(`${run.job}-${victim}`, offset);
      },
    }),
    expectRun: (ctx) => {
      const healthy = expectHealthy(ctx);
      if (healthy) return healthy;
      // The steps reached the members: some line was stamped (member's Date.now) far outside the run's real time.
      const skewed = ctx.run.incarnations.some((m) => m.events.some((e) => e.t !== undefined && (e.t < ctx.run.started - 60_000 || e.t > Date.now() + 60_000)));
      if (!skewed) return 'no member line carries a stepped time: the clock shim did not take effect';
      // A wall-clock step touches no lease (renewals run on monotonic timers, leases expire on etcd's clock).
      const gaps = presenceGaps(ctx.run.auditor.history).filter((g) => g.from < verdictAt(ctx.run.auditor.history));
      return gaps.length === 0 ? undefined : `clock steps cost sessions: ${JSON.stringify(gaps)}`;
    },
    summary: sessionSummary,
    expect: (f) => (f.transitions.takeover === 0 && f.transitions.reclaim === 0 ? undefined : `clock steps caused takeovers: ${JSON.stringify(f.transitions)}`),
  },
];
