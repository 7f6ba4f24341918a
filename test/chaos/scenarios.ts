/**
 * The chaos scenarios: each one a fleet topology, job settings, and a fault
 * script driven by the run's seeded RNG; run-scenario.ts runs one.
 * Framework-free: the test file asserts on the result.
 *
 * Every run is reproducible from (scenario, seed) up to OS scheduling; the
 * seed is printed, and CHAOS_SEED replays one.
 */
import { isSplitfleetError } from '../../src/errors.js';
import { evacuateInstance, pauseJob, resumeInstance, resumeJob } from '../../src/operator/control.js';
import { retrySplits } from '../../src/operator/retry.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { EtcdHandle } from '../support/etcd.js';
import type { HistoryCheckFigures } from '../support/history-check.js';
import type { AuditFigures, Violation } from './checks.js';
import { EtcdCluster } from './cluster.js';
import type { PeerIsolation } from './faults.js';
import { TcpProxy } from './proxy.js';
import { ChaosRun, sleep, type ChaosSettings } from './runner.js';

export const SOAK = process.env.CHAOS_SOAK === '1';
/** Longer schedules under CHAOS_SOAK=1. */
const scale = (n: number) => (SOAK ? n * 3 : n);

export interface ScenarioContext {
  run: ChaosRun;
  /** The scenario's own etcd (topology 'private'). */
  etcd?: EtcdHandle;
  cluster?: EtcdCluster;
  /** Per-member proxies (topology 'proxied'). */
  proxies: Map<string, TcpProxy>;
  /** A direct connection for operator actions (`splitfleet pause` and so on). */
  operator: EtcdStore;
  /** The namespace of the cluster's last member, whose peer link can be cut (`isolate: true`). */
  isolation?: PeerIsolation;
}

export interface Scenario {
  name: string;
  /** What the fleet talks to: the shared etcd, its own etcd (it gets killed), per-member proxies, or a cluster. */
  topology: 'shared' | 'private' | 'proxied' | 'cluster';
  settings: (seed: number) => ChaosSettings;
  /** Starts the fleet (default: w0..w4, cooperative). */
  start?: (ctx: ScenarioContext) => Promise<void>;
  /** Injects faults; returns when the chaos phase is over (the job may still be running). */
  chaos: (ctx: ScenarioContext) => Promise<void>;
  /** Figures the scenario must produce for its run to count (e.g. forced drains actually happened). */
  expect?: (figures: AuditFigures) => string | undefined;
  /** True for the reference run, which injects nothing. */
  faultFree?: boolean;
  /** Topology 'cluster' only: the last member runs in a network namespace (faults.ts) that `ctx.isolation` cuts. */
  isolate?: boolean;
  /** Topology 'cluster' only: its members start with `--pre-vote` (docs/operations.md's recommendation for etcd 3.4). */
  preVote?: boolean;
  /** Figures of the whole run for the results line (e.g. sessions lost), once the job is complete. */
  summary?: (ctx: ScenarioContext) => string;
  /** Checks on the whole run (its recorded history, its fault log) once the job is complete; a message when it fails. */
  expectRun?: (ctx: ScenarioContext) => string | undefined;
  /** The endpoints `instance` is given (default: its proxy, or every member). */
  endpointsFor?: (instance: string, topology: { cluster: EtcdCluster | undefined; direct: string[] }) => string[] | undefined;
}

export interface ScenarioResult {
  scenario: string;
  seed: number;
  job: string;
  figures: AuditFigures;
  violations: Violation[];
  faults: number;
  crashes: ChaosRun['crashes'];
  verdicts: Record<string, number>;
  /** From the first member's start to the last split terminal on etcd. */
  completeMs: number;
  expectation: string | undefined;
  describe: string;
  /** The history check's figures (test/support/history-check.ts). */
  history: HistoryCheckFigures;
  /** The scenario's own figures (`summary`), if it has any. */
  summary?: string;
}

export function baseSettings(seed: number, over: Partial<ChaosSettings> = {}, knobs: Record<string, number> = {}): ChaosSettings {
  return {
    splits: SOAK ? 60 : 40, seed, maxInFlight: 3, unitMs: 40, commitEvery: 5, minUnits: 40, maxUnits: 200,
    ...over,
    knobs: {
      leaseDurationMs: 2000, opTimeoutMs: 750, rebalanceDelayMs: 1000, drainDeadlineMs: 1500, reconcileIntervalMs: 2000,
      // The library's default maxAttempts (4): a takeover consumes an attempt only when the tenancy
      // it ends committed nothing (substrate.md), so kills and partitions of splits that commit do not
      // quarantine them; checks.ts counts attempts one by one (attempts-miscounted, attempt-burned).
      ...knobs,
      ...(process.env.CHAOS_MAX_ATTEMPTS ? { maxAttempts: Number(process.env.CHAOS_MAX_ATTEMPTS) } : {}),
    },
  };
}

export const NAMES = ['w0', 'w1', 'w2', 'w3', 'w4'];

const expectAtLeast = (what: keyof AuditFigures['transitions'] | 'leaderTerms', n: number) => (f: AuditFigures): string | undefined => {
  const got = what === 'leaderTerms' ? f.leaderTerms : f.transitions[what];
  return got >= n ? undefined : `expected at least ${n} ${what}, got ${got} (${JSON.stringify(f.transitions)})`;
};

/** Restarts `instance` after `ms`, unless the job finished meanwhile. */
function restartLater(run: ChaosRun, instance: string, ms: number): void {
  void sleep(ms).then(() => {
    if (!run.done && !run.member(instance)?.running) {
      run.note(`restart ${instance}`);
      run.spawn(instance);
    }
  });
}

export const SCENARIOS: Scenario[] = [
  {
    // The reference: the same fleet and job with no fault. Only cooperative moves, so nothing replays.
    name: 'baseline',
    topology: 'shared',
    settings: (seed) => baseSettings(seed),
    chaos: async () => undefined,
    faultFree: true,
    expect: (f) => (f.duplicates === 0 && f.transitions.takeover === 0 && f.transitions.forced === 0 ? undefined
      : `a fault-free run replayed work: ${f.duplicates} duplicates, ${JSON.stringify(f.transitions)}`),
  },
  {
    name: 'worker-sigkill',
    topology: 'shared',
    settings: (seed) => baseSettings(seed),
    chaos: ({ run }) => run.schedule({
      minGap: 700, maxGap: 1800, maxFaults: scale(6), budgetMs: scale(20_000),
      step: async () => {
        const victim = run.pick(run.live);
        if (!victim) return;
        await run.kill(victim);
        restartLater(run, victim, run.between(200, 2500));
      },
    }),
    expect: expectAtLeast('takeover', 1),
  },
  {
    name: 'worker-sigstop',
    topology: 'shared',
    settings: (seed) => baseSettings(seed),
    chaos: ({ run }) => run.schedule({
      minGap: 500, maxGap: 1500, maxFaults: scale(4), budgetMs: scale(25_000),
      step: async () => {
        const holding = run.live.filter((i) => run.auditor.heldBy(i).length > 0);
        const victim = run.pick(holding);
        if (!victim) return;
        const lease = run.settings.knobs.leaseDurationMs!;
        // Every third pause is short (inside the lease: nothing should move); the rest outlive the lease.
        const ms = run.faults % 3 === 2 ? run.between(200, 600) : run.between(lease + 500, lease + 2000);
        run.pause(victim);
        run.note(`  paused for ${ms} ms`);
        await sleep(ms);
        run.resume(victim);
      },
    }),
    expect: expectAtLeast('takeover', 1),
  },
  {
    name: 'leader-sigkill',
    topology: 'shared',
    settings: (seed) => baseSettings(seed),
    chaos: ({ run }) => run.schedule({
      minGap: 1000, maxGap: 2500, maxFaults: scale(3), budgetMs: scale(25_000),
      step: async () => {
        const leader = run.auditor.leaderInstance;
        if (!leader || !run.member(leader)?.running) return;
        await run.kill(leader);
        restartLater(run, leader, run.between(300, 2000));
        // The next fault waits for a new term (or the end of the job).
        await run.until('a new leader', () => run.done || (run.auditor.leaderInstance !== undefined && run.auditor.leaderInstance !== leader) ||
          (run.auditor.leaderInstance === leader && !!run.member(leader)?.running), 20_000);
      },
    }),
    expect: expectAtLeast('leaderTerms', 2),
  },
  {
    name: 'etcd-sigkill',
    topology: 'private',
    settings: (seed) => baseSettings(seed),
    chaos: ({ run, etcd }) => run.schedule({
      minGap: 1500, maxGap: 3000, maxFaults: scale(2), budgetMs: scale(25_000),
      step: async () => {
        const lease = run.settings.knobs.leaseDurationMs!;
        // Alternate a short outage (sessions survive) and one past the lease (every session is lost).
        const down = run.faults % 2 === 0 ? run.between(300, 1200) : run.between(lease + 500, lease + 2500);
        run.fault(`SIGKILL etcd for ${down} ms`);
        await etcd!.kill('SIGKILL');
        await sleep(down);
        await etcd!.restart();
        run.note('etcd restarted on the same data dir');
      },
    }),
  },
  {
    name: 'proxy-cut-delay',
    topology: 'proxied',
    settings: (seed) => baseSettings(seed),
    chaos: ({ run, proxies }) => run.schedule({
      minGap: 400, maxGap: 1500, maxFaults: scale(10), budgetMs: scale(25_000),
      step: async () => {
        const victim = run.pick(run.live);
        const proxy = victim ? proxies.get(victim) : undefined;
        if (!victim || !proxy) return;
        const lease = run.settings.knobs.leaseDurationMs!;
        const r = run.rng();
        if (r < 0.3) {
          run.fault(`cut ${victim}: ${proxy.cut()} connections reset`);
        } else if (r < 0.4) {
          let n = 0;
          for (const p of proxies.values()) n += p.cut();
          run.fault(`cut every member: ${n} connections reset`);
        } else if (r < 0.65) {
          const ms = run.between(50, 400);
          const hold = run.between(1500, 3000);
          run.fault(`latency ${ms} ms on ${victim} for ${hold} ms`);
          proxy.setLatency(ms);
          void sleep(hold).then(() => proxy.setLatency(0));
        } else {
          const long = run.rng() < 0.5;
          const hold = long ? run.between(lease + 300, lease + 1500) : run.between(200, 700);
          const mode = run.rng() < 0.5 ? 'deliver' : 'reset';
          run.fault(`partition ${victim} for ${hold} ms, then heal (${mode})`);
          proxy.partition();
          await sleep(hold);
          proxy.heal(mode);
        }
      },
    }),
  },
  {
    // Silent network failure: a member's path stops forwarding in both directions but keeps its
    // connections open (no reset, no FIN: a load balancer's idle timeout, a half-open link). The
    // member must notice within one lease (its renewals go unanswered), be fenced, and rejoin once
    // the path heals (gRPC keepalive drops the dead connection); a leader behind it must lose its
    // term to another member. First the leader, then workers holding splits.
    name: 'proxy-blackhole',
    topology: 'proxied',
    settings: (seed) => baseSettings(seed),
    chaos: ({ run, proxies }) => {
      let first = true;
      return run.schedule({
        minGap: 800, maxGap: 2000, maxFaults: scale(3), budgetMs: scale(30_000),
        step: async () => {
          const leader = run.auditor.leaderInstance;
          const victim = first && leader && run.member(leader)?.running ? leader : run.pick(run.live);
          const proxy = victim ? proxies.get(victim) : undefined;
          if (!victim || !proxy) return;
          first = false;
          const lease = run.settings.knobs.leaseDurationMs!;
          const hold = run.between(lease + 500, lease + 2000);
          run.fault(`blackhole ${victim}${victim === leader ? ' (the leader)' : ''} for ${hold} ms`);
          proxy.blackhole();
          if (victim === leader) {
            await run.until('another member to lead', () => run.done || (run.auditor.leaderInstance !== undefined && run.auditor.leaderInstance !== victim), 20_000);
          } else {
            await sleep(hold);
          }
          proxy.healBlackhole();
          run.note(`${victim}'s path forwards again (its open connections stay dead)`);
        },
      });
    },
    expect: expectAtLeast('leaderTerms', 2),
  },
  {
    name: 'drains',
    topology: 'shared',
    // Lanes enough for every split, so joins move splits (revocations) instead of filling from a queue;
    // long splits, so there is still work in flight when members leave.
    settings: (seed) => baseSettings(seed, { splits: SOAK ? 60 : 30, maxInFlight: SOAK ? 14 : 8, minUnits: 100, maxUnits: 200 },
      { rebalanceDelayMs: 0, drainDeadlineMs: 1500 }),
    start: async ({ run }) => {
      run.spawn('w0', { drain: 'cooperate' });
      run.spawn('w1', { drain: 'slow', slowDrainMs: 300 }); // slow, inside the deadline: still cooperative
      run.configure('w2', { drain: 'slow', slowDrainMs: 4000 }); // past the deadline: forced
      run.configure('w3', { drain: 'ignore' }); // a wedged drain: forced at the deadline
      run.configure('w4', { drain: 'decline' }); // forced at once
    },
    chaos: async ({ run }) => {
      // Joins take splits from the members already running (revocations of w0, w1 and the earlier joiners).
      for (const name of ['w2', 'w3', 'w4']) {
        await sleep(run.between(600, 1200));
        if (run.done) return;
        run.note(`join ${name}`);
        run.spawn(name);
      }
      // Then every member leaves once, in a seeded order (SIGTERM drains all it holds, each in its own
      // way), and comes back: its return moves splits back to it, revoking them from the others.
      const order = [...NAMES].sort(() => run.rng() - 0.5);
      let next = 0;
      await run.schedule({
        minGap: 400, maxGap: 900, maxFaults: scale(5), budgetMs: scale(25_000),
        step: async () => {
          const victim = order[next++ % order.length]!;
          if (!run.member(victim)?.running || run.live.length < 2) return;
          await run.stopGracefully(victim);
          restartLater(run, victim, run.between(300, 800));
        },
      });
    },
    expect: (f) => {
      const t = f.transitions;
      return t.cooperative > 0 && t.forced > 0 && t.declined > 0 ? undefined
        : `expected cooperative, forced and declined transfers, got ${JSON.stringify(t)}`;
    },
  },
  {
    // The operator actions in the fault script: pause and resume, evacuate (undone by resume --instance
    // or by the instance's restart), retry, with kills in between. Every promise of the auditor holds.
    name: 'operator-actions',
    topology: 'shared',
    settings: (seed) => baseSettings(seed, { minUnits: 60, maxUnits: 160 }),
    chaos: ({ run, operator }) => run.schedule({
      minGap: 600, maxGap: 1500, maxFaults: scale(6), budgetMs: scale(30_000),
      step: async () => {
        const target = { store: operator, job: run.job };
        const act = async (what: string, action: () => Promise<unknown>) => {
          run.fault(what);
          try {
            await action();
          } catch (e) {
            if (!isSplitfleetError(e, 'INVALID_INPUT')) throw e; // finished, or not a member yet: an operator's miss
            run.note(`  refused: ${(e as Error).message}`);
          }
        };
        const roll = run.between(0, 3);
        if (roll === 0) {
          await act('operator: pause', () => pauseJob(target));
          await sleep(run.between(800, 2500));
          await act('operator: resume', () => resumeJob(target));
        } else if (roll === 1) {
          const victim = run.pick(run.live);
          if (!victim) return;
          await act(`operator: evacuate ${victim}`, () => evacuateInstance({ ...target, instance: victim }));
          await sleep(run.between(800, 2500));
          await act(`operator: resume --instance ${victim}`, () => resumeInstance({ ...target, instance: victim }));
        } else if (roll === 2) {
          // Evacuated ahead of a deploy, then restarted: the new run is assigned again.
          const victim = run.pick(run.live);
          if (!victim) return;
          await act(`operator: evacuate ${victim}, then restart it`, () => evacuateInstance({ ...target, instance: victim }));
          await sleep(run.between(500, 1500));
          await run.stopGracefully(victim);
          restartLater(run, victim, run.between(200, 800));
        } else {
          await act('operator: pause, a kill while paused, resume', () => pauseJob(target));
          const victim = run.pick(run.live);
          if (victim) {
            await run.kill(victim);
            restartLater(run, victim, run.between(200, 1500));
          }
          await sleep(run.between(500, 1500));
          await act('operator: resume', () => resumeJob(target));
          await act('operator: retry --all-quarantined', () => retrySplits({ ...target, allQuarantined: true }));
        }
      },
    }),
    expect: (f) => (f.transitions.cooperative > 0 ? undefined : `expected cooperative drains (pause, evacuate), got ${JSON.stringify(f.transitions)}`),
  },
  {
    name: 'cluster-member-loss',
    topology: 'cluster',
    settings: (seed) => baseSettings(seed, {}, { leaseDurationMs: 3000, opTimeoutMs: 1000 }),
    chaos: ({ run, cluster }) => run.schedule({
      minGap: 1500, maxGap: 3000, maxFaults: scale(2), budgetMs: scale(30_000),
      step: async () => {
        // First the raft leader, then any member; each stays down a while, then rejoins on its data dir.
        const leader = await cluster!.leaderIndex();
        const i = run.faults === 0 && leader !== undefined ? leader : run.between(0, 2);
        const down = run.between(1500, 5000);
        run.fault(`SIGKILL etcd member m${i}${i === leader ? ' (raft leader)' : ''} for ${down} ms`);
        await cluster!.kill(i);
        await sleep(down);
        await cluster!.restart(i);
        run.note(`member m${i} restarted; raft leader m${await cluster!.leaderIndex()}`);
      },
    }),
  },
  {
    // Last, so that adding it moved no other scenario's seed (BASE_SEED + index).
    // A packed job (decision 0037): its splits in queue pages, promoted before they are assigned and
    // folded back once completed. Workers and the leader killed in turn: takeovers of promoted splits,
    // and new leaders that must read the pages and folded bits their predecessors wrote. Four buckets
    // (the `buckets` option; 40 splits would get one): pages, promotions and fold-backs in each.
    name: 'packed-kills',
    topology: 'shared',
    settings: (seed) => ({ ...baseSettings(seed, {}, { buckets: 4 }), layout: 'packed' as const }),
    chaos: ({ run }) => run.schedule({
      minGap: 800, maxGap: 2000, maxFaults: scale(4), budgetMs: scale(20_000),
      step: async () => {
        const leader = run.auditor.leaderInstance;
        const victim = run.faults % 2 === 1 && leader && run.member(leader)?.running ? leader : run.pick(run.live);
        if (!victim) return;
        await run.kill(victim);
        // Back within its lease it reclaims its own lease keys; later, another member has taken them over.
        restartLater(run, victim, run.between(200, run.settings.knobs.leaseDurationMs! + 1500));
      },
    }),
    expect: (f) => (f.transitions.takeover + f.transitions.reclaim > 0 && f.leaderTerms >= 2 && f.folded > 0 && f.buckets >= 2 ? undefined
      : `expected takeovers or reclaims, a new leader, fold-backs and pages in several buckets, got ${f.leaderTerms} terms, ${f.folded} folded, ${f.buckets} buckets with pages, ${JSON.stringify(f.transitions)}`),
  },
];
