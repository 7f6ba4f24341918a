#!/usr/bin/env node
/**
 * Measurements (not assertions) of the assignment protocol on a real,
 * loopback etcd. Fleet members run as a few OS processes
 * (dist/bench/protocol-member.js, several coordinators each, each on its own
 * EtcdStore); this process watches the job's keys and times what it sees.
 *
 *   assign  10k splits, 20 members (cap 600: 12,000 lanes, every split assigned; default lease and
 *           op timeout), instant drains:
 *           - the initial settle (seed + 10k claims);
 *           - assignment records written per minute in the steady state;
 *           - a 21st member joins: from its presence key to every move claimed
 *             by its new owner (target ≤ 2 s);
 *           - that member (lease 5 s) is SIGKILLed (rebalanceDelayMs 0): from the
 *             kill to its splits claimed elsewhere, broken down.
 *   scale   a 100k-split final plan, 50 members (cap 8: 400 lanes, the rest is
 *           the queue), default knobs: time for the leader (alone) to seed the
 *           plan, then time until every lane is busy once the other 49 are
 *           started, the leader's peak RSS, its event-loop max delay
 *           (perf_hooks.monitorEventLoopDelay) and decision times, and the
 *           members' processes' peak RSS.
 *
 * Usage: npx tsc -p tsconfig.json && node dist/bench/protocol.js [assign|scale|all] [--steady-seconds 60]
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { jobPrefix } from '../src/protocol/keys.js';
import { EtcdStore } from '../src/store/etcd/etcd.js';
import type { WatchHandle } from '../src/store/store.js';
import { benchArgs, numberArg } from './args.js';
import { startBenchEtcd } from './etcd.js';
import { FleetChild, type Line } from './fleet-runner.js';
import type { BenchMemberConfig } from './protocol-member.js';
import { quantile } from './stats.js';

const MEMBER = fileURLToPath(new URL('./protocol-member.js', import.meta.url));
const VICTIM_LEASE_MS = 5000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- member processes ----------------------------------------------------------

/** A process of fleet members (protocol-member.ts), run as every bench runs its fleet (fleet-runner.ts). */
class MemberProcess extends FleetChild {
  constructor(readonly cfg: BenchMemberConfig) {
    super({ script: MEMBER, envVar: 'SPLITFLEET_BENCH', config: cfg, execArgv: ['--max-old-space-size=8192'] });
    this.proc.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') {
        const last = this.lines.filter((l) => l.ev !== 'stats').slice(-3);
        console.error(`member process ${cfg.instances.join(',')} exited (${code ?? signal}): ${JSON.stringify(last)}\n${this.stderr}`);
      }
    });
  }

  stats(since = 0): Line[] {
    return this.lines.filter((l) => l.ev === 'stats' && l.t >= since);
  }
}

// ---- a mirror of the keys the figures need ------------------------------------

class Mirror {
  readonly leases = new Map<string, string>();
  readonly leasePutAt = new Map<string, number>();
  readonly assigns = new Map<string, string[]>();
  readonly assignWrites: { at: number; instance: string; type: string }[] = [];
  readonly workers = new Map<string, number>();
  readonly workerEvents: { at: number; instance: string; type: string }[] = [];
  plan: { final: boolean; planned: number; at: number } | undefined;
  private readonly handles: WatchHandle[] = [];

  static async start(store: EtcdStore, prefix: string): Promise<Mirror> {
    const m = new Mirror();
    const kinds: [string, (key: string, type: string, value: string | undefined) => void][] = [
      ['lease.', (key, type, value) => {
        const id = key.slice(`${prefix}lease.`.length);
        if (type === 'put') {
          m.leases.set(id, (JSON.parse(value!) as { owner: string }).owner);
          m.leasePutAt.set(id, Date.now());
        } else m.leases.delete(id);
      }],
      ['assign.', (key, type, value) => {
        const instance = key.slice(`${prefix}assign.`.length);
        m.assignWrites.push({ at: Date.now(), instance, type });
        if (type === 'put') m.assigns.set(instance, (JSON.parse(value!) as { splits: string[] }).splits);
        else m.assigns.delete(instance);
      }],
      ['worker.', (key, type) => {
        const instance = key.slice(`${prefix}worker.`.length);
        m.workerEvents.push({ at: Date.now(), instance, type });
        if (type === 'put') m.workers.set(instance, Date.now());
        else m.workers.delete(instance);
      }],
      ['plan', (_key, type, value) => {
        if (type !== 'put') return;
        const p = JSON.parse(value!) as { final: boolean; planned: number };
        m.plan = { final: p.final, planned: p.planned, at: Date.now() };
      }],
    ];
    for (const [kind, apply] of kinds) {
      const h = store.watch(`${prefix}${kind}`, { onEvent: (e) => apply(e.key, e.type, e.value) });
      m.handles.push(h);
      await h.ready;
    }
    return m;
  }

  heldBy(instance: string): string[] {
    return [...this.leases].filter(([, o]) => o === instance).map(([id]) => id);
  }

  /** Every live member has a record, every split it names is leased by it, and nothing else is leased. */
  settled(members: number): boolean {
    if (this.workers.size !== members) return false;
    for (const instance of this.workers.keys()) if (!this.assigns.has(instance)) return false;
    let named = 0;
    for (const [instance, ids] of this.assigns) {
      if (!this.workers.has(instance)) continue;
      for (const id of ids) if (this.leases.get(id) !== instance) return false;
      named += ids.length;
    }
    return named === this.leases.size && named > 0;
  }

  async until(what: string, pred: () => boolean, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let report = Date.now() + 10_000;
    while (!pred()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${this.describe()}`);
      if (Date.now() > report) {
        report = Date.now() + 10_000;
        if (process.env.BENCH_VERBOSE) console.error(`… waiting for ${what}: ${this.describe()}`);
      }
      await sleep(10);
    }
    return Date.now();
  }

  describe(): string {
    const named = [...this.assigns].filter(([i]) => this.workers.has(i)).reduce((s, [, ids]) => s + ids.length, 0);
    return `${this.workers.size} members, ${this.assigns.size} records naming ${named} splits, ${this.leases.size} leases, plan ${JSON.stringify(this.plan)}`;
  }

  async close(): Promise<void> {
    await Promise.all(this.handles.map((h) => h.close()));
  }
}

const fmt = (ms: number) => `${Math.round(ms)} ms`;
const mib = (b: number) => `${Math.round(b / 1048576)} MiB`;

// ---- 10k splits, 20 members ----------------------------------------------------

async function benchAssign(steadySeconds: number): Promise<Record<string, unknown>> {
  const etcd = await startBenchEtcd();
  const store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 5000 });
  const job = 'bench-10k';
  const prefix = jobPrefix('splitfleet', job);
  const mirror = await Mirror.start(store, prefix);
  const base: Omit<BenchMemberConfig, 'instances'> = {
    endpoint: etcd.endpoint, job, splits: 10_000, seed: 1, maxInFlight: 600, statsEveryMs: 1000,
    config: { rebalanceDelayMs: 0 },
  };
  // The member that joins (and is later killed) runs a short lease: its lease is what the kill waits out.
  const victimConfig = { rebalanceDelayMs: 0, leaseDurationMs: VICTIM_LEASE_MS, opTimeoutMs: 2000, drainDeadlineMs: 2000 };
  const name = (i: number) => `w${String(i).padStart(2, '0')}`;
  const procs: MemberProcess[] = [];
  try {
    const started = Date.now();
    const leader = new MemberProcess({ ...base, instances: [name(0)] });
    procs.push(leader);
    await leader.waitFor('the first member to lead', (l) => l.ev === 'leading', 30_000);
    // The fleet is brought up a process at a time, each step waiting for the previous one to
    // settle: all twenty at once (each claiming hundreds of splits at once) overloads two cores
    // and etcd ("request timed out"), and that start-up storm is not what is measured here.
    const settleMs = Number(process.env.BENCH_SETTLE_MS ?? 900_000);
    await mirror.until('the first member to hold its budget', () => mirror.plan?.final === true && mirror.settled(1), settleMs);
    for (const [a, b] of [[1, 8], [8, 14], [14, 20]] as const) {
      procs.push(new MemberProcess({ ...base, instances: Array.from({ length: b - a }, (_, k) => name(a + k)) }));
      await mirror.until(`${b} members to settle`, () => mirror.settled(b), settleMs);
    }
    const settledAt = await mirror.until('20 members to settle on 10k splits', () => mirror.settled(20) && mirror.leases.size === 10_000, settleMs);
    const initialSettleMs = settledAt - started;
    console.log(`assign: 20 members settled on 10,000 splits ${fmt(initialSettleMs)} after the first member started`);

    // Steady state: nothing changes, nothing should be written.
    const writes0 = mirror.assignWrites.length;
    await sleep(steadySeconds * 1000);
    const steadyWrites = mirror.assignWrites.length - writes0;
    const perMinute = (steadyWrites * 60) / steadySeconds;
    console.log(`assign: steady state, ${steadyWrites} assignment records written in ${steadySeconds} s (${perMinute}/min)`);

    // A member joins.
    const before = new Map(mirror.leases);
    const joinWrites0 = mirror.assignWrites.length;
    const joiner = new MemberProcess({ ...base, config: victimConfig, instances: [name(20)] });
    procs.push(joiner);
    await mirror.until('the joiner presence', () => mirror.workers.has(name(20)), 30_000);
    const joinedAt = mirror.workers.get(name(20))!;
    await mirror.until('21 members to settle', () => mirror.settled(21) && mirror.heldBy(name(20)).length > 0, 120_000);
    const moved = [...mirror.leases].filter(([id, o]) => before.get(id) !== o).map(([id]) => id);
    const claimTimes = moved.map((id) => mirror.leasePutAt.get(id)! - joinedAt).sort((x, y) => x - y);
    const lastClaim = joinedAt + claimTimes[claimTimes.length - 1]!;
    const toJoiner = mirror.heldBy(name(20)).length;
    const firstWrite = mirror.assignWrites[joinWrites0]?.at ?? NaN;
    const joinMs = lastClaim - joinedAt;
    console.log(`assign: join → every move claimed: ${fmt(joinMs)} (${moved.length} moves, ${toJoiner} of them to the joiner; first record written ${fmt(firstWrite - joinedAt)} after the presence key; ` +
      `moves claimed by p50 ${fmt(quantile(claimTimes, 0.5))}, p90 ${fmt(quantile(claimTimes, 0.9))})`);

    // That member is SIGKILLed.
    const victimSplits = mirror.heldBy(name(20));
    const killedAt = Date.now();
    joiner.kill();
    await mirror.until('the victim splits to be claimed elsewhere', () => victimSplits.every((id) => {
      const o = mirror.leases.get(id);
      return o !== undefined && o !== name(20);
    }), 120_000);
    const expiredAt = mirror.workerEvents.find((e) => e.instance === name(20) && e.type === 'delete' && e.at >= killedAt)!.at;
    const reassignAt = mirror.assignWrites.find((w) => w.at >= expiredAt)!.at;
    const allClaimedAt = Math.max(...victimSplits.map((id) => mirror.leasePutAt.get(id)!));
    console.log(`assign: SIGKILL of a member holding ${victimSplits.length} splits → all claimed elsewhere: ${fmt(allClaimedAt - killedAt)} ` +
      `(lease expiry ${fmt(expiredAt - killedAt)}, then reassignment written ${fmt(reassignAt - expiredAt)}, then claims ${fmt(allClaimedAt - reassignAt)})`);
    const leaderStats = leader.stats().at(-1);
    const restarts = procs.reduce((n, p) => n + p.lines.filter((l) => l.ev === 'restart').length, 0);
    console.log(`assign: ${restarts} member restarts during the run (start-up or fatal failures under load)`);
    return {
      restarts,
      initialSettleMs, steadySeconds, steadyWrites, steadyWritesPerMinute: perMinute,
      join: { moves: moved.length, toJoiner, joinToAllClaimedMs: joinMs, firstRecordMs: firstWrite - joinedAt, p50Ms: quantile(claimTimes, 0.5), p90Ms: quantile(claimTimes, 0.9) },
      kill: {
        splits: victimSplits.length, killToAllClaimedMs: allClaimedAt - killedAt, killToExpiryMs: expiredAt - killedAt,
        expiryToReassignMs: reassignAt - expiredAt, reassignToAllClaimedMs: allClaimedAt - reassignAt, leaseDurationMs: VICTIM_LEASE_MS,
      },
      leaderDecisions: leaderStats?.decisions,
    };
  } catch (e) {
    dumpProcesses(procs);
    throw e;
  } finally {
    for (const p of procs) p.kill();
    await mirror.close();
    await store.close();
    await etcd.stop();
  }
}

function dumpProcesses(procs: MemberProcess[]): void {
  for (const p of procs) {
    const last = p.lines.filter((l) => l.ev !== 'stats').slice(-3);
    console.error(`${p.cfg.instances.join(',')}: exit ${p.proc.exitCode ?? p.proc.signalCode ?? 'running'}; last ${JSON.stringify(last)}; stats ${JSON.stringify(p.stats().at(-1))}\n${p.stderr}`);
  }
}

// ---- 100k splits, 50 members ---------------------------------------------------

async function benchScale(): Promise<Record<string, unknown>> {
  const etcd = await startBenchEtcd();
  const store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 10_000 });
  const job = 'bench-100k';
  const prefix = jobPrefix('splitfleet', job);
  const mirror = await Mirror.start(store, prefix);
  const members = 50;
  const cap = 8;
  const base: Omit<BenchMemberConfig, 'instances'> = {
    endpoint: etcd.endpoint, job, splits: 100_000, seed: 2, maxInFlight: cap, statsEveryMs: 500, config: {},
  };
  const name = (i: number) => `m${String(i).padStart(2, '0')}`;
  const procs: MemberProcess[] = [];
  try {
    const started = Date.now();
    const leader = new MemberProcess({ ...base, instances: [name(0)] });
    procs.push(leader);
    const leading = await leader.waitFor('the leader', (l) => l.ev === 'leading', 60_000);
    // The leader seeds alone: 200k records is what seeding costs, without 49 snapshots competing
    // for the same two cores (they come next, and are measured separately).
    const seededAt = await mirror.until('the plan to be seeded', () => mirror.plan?.final === true && mirror.plan.planned === 100_000, 900_000);
    const seedMs = seededAt - leading.t;
    console.log(`scale: 100,000 splits seeded ${fmt(seedMs)} after the leader was elected (the leader alone)`);
    const spawnedAt = Date.now();
    const groups = [[1, 14], [14, 26], [26, 38], [38, 50]] as const;
    for (const [a, b] of groups) procs.push(new MemberProcess({ ...base, instances: Array.from({ length: b - a }, (_, k) => name(a + k)) }));
    const busyAt = await mirror.until('every lane to be busy', () => mirror.workers.size === members && mirror.leases.size === members * cap, 900_000);
    const busyMs = busyAt - spawnedAt;
    const joinedAt = Math.max(...[...mirror.workers.values()]);
    console.log(`scale: every lane busy (${members * cap} lanes) ${fmt(busyMs)} after the other 49 members were started ` +
      `(4 processes, each starting its coordinators one after another); the last joined ${fmt(joinedAt - spawnedAt)} in, its lanes were busy ${fmt(busyAt - joinedAt)} later`);
    // A short steady period, to see what the leader costs when nothing changes.
    const writes0 = mirror.assignWrites.length;
    await sleep(15_000);
    const steadyWrites = mirror.assignWrites.length - writes0;
    const ls = leader.stats(started);
    const peakRss = Math.max(...ls.map((l) => l.peakRss as number));
    const loopMax = Math.max(...ls.map((l) => l.loopMaxMs as number));
    const loopMaxSeeding = Math.max(0, ...ls.filter((l) => l.t <= seededAt).map((l) => l.loopMaxMs as number));
    const loopMaxSteady = Math.max(0, ...ls.filter((l) => l.t > busyAt).map((l) => l.loopMaxMs as number));
    const decisions = ls.at(-1)!.decisions as { count: number; maxMs: number; totalMs: number; maxSplits: number };
    const memberRss = procs.slice(1).map((p) => Math.max(...p.stats().map((l) => l.peakRss as number)));
    console.log(`scale: leader peak RSS ${mib(peakRss)}; event-loop max delay ${fmt(loopMax)} overall (${fmt(loopMaxSeeding)} while seeding, ${fmt(loopMaxSteady)} when steady)`);
    console.log(`scale: leader decisions ${decisions.count}, max ${fmt(decisions.maxMs)}, mean ${fmt(decisions.totalMs / Math.max(1, decisions.count))} over ${decisions.maxSplits} splits; ${steadyWrites} records written in 15 s steady`);
    console.log(`scale: member processes (12–13 coordinators each) peak RSS ${memberRss.map(mib).join(', ')}`);
    const restarts = procs.reduce((n, p) => n + p.lines.filter((l) => l.ev === 'restart').length, 0);
    console.log(`scale: ${restarts} member restarts during the run`);
    return {
      restarts,
      seedMs, busyAfterStartMs: busyMs, lastJoinAfterStartMs: joinedAt - spawnedAt, busyAfterLastJoinMs: busyAt - joinedAt,
      leaderPeakRss: peakRss, leaderLoopMaxMs: loopMax, leaderLoopMaxSeedingMs: loopMaxSeeding, leaderLoopMaxSteadyMs: loopMaxSteady,
      decisions, steadyWrites15s: steadyWrites, memberProcessPeakRss: memberRss,
    };
  } catch (e) {
    dumpProcesses(procs);
    throw e;
  } finally {
    for (const p of procs) p.kill();
    await mirror.close();
    await store.close();
    await etcd.stop();
  }
}

async function main(): Promise<void> {
  if (!existsSync(MEMBER)) throw new Error(`${MEMBER} is missing: run 'npx tsc -p tsconfig.json' first`);
  const { values: v, positionals } = benchArgs({ 'steady-seconds': { type: 'string' } });
  const which = positionals[0] ?? 'all';
  const steadySeconds = numberArg('steady-seconds', v['steady-seconds'], 60);
  const results: Record<string, unknown> = { node: process.version, cpus: (await import('node:os')).cpus().length };
  if (which === 'assign' || which === 'all') results.assign = await benchAssign(steadySeconds);
  if (which === 'scale' || which === 'all') results.scale = await benchScale();
  console.log(JSON.stringify(results));
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
