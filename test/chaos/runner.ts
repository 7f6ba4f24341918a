/**
 * One chaos run: a fleet of member processes (dist/src/testing/fleet-process.js,
 * through test/support/fleet.ts) on one job, the auditor recording it, a log
 * of every fault injected, and the supervision a real deployment has: a
 * member that exits on its own before the job is finished (a crash) is
 * started again after a pause, as a restart policy would.
 *
 * Invariants: every fault is written to `log` with its time since the start,
 * so a failure message shows the schedule that produced it; `finish()` leaves
 * no process running; randomness comes only from the seeded `rng`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ledger } from '../../src/testing/ledger.js';
import { prng } from '../../src/prng.js';
import { fleetProcessScript, spawnFleetMember, type FleetEvent, type FleetMember, type FleetProcessConfig } from '../support/fleet.js';
import { sleep, waitUntil } from '../support/wait.js';
import type { Auditor } from './auditor.js';

export interface ChaosSettings {
  splits: number;
  seed: number;
  maxInFlight: number;
  unitMs: number;
  commitEvery: number;
  minUnits: number;
  maxUnits: number;
  /** Coordinator knobs: leaseDurationMs, opTimeoutMs, rebalanceDelayMs, drainDeadlineMs, reconcileIntervalMs, maxAttempts. */
  knobs: Record<string, number>;
  /** The job's layout (decision 0037); absent: the library's default, 'keys'. */
  layout?: 'keys' | 'packed';
}

export interface MemberOptions {
  drain?: FleetProcessConfig['drain'];
  slowDrainMs?: number;
  /** Extra environment for the member's process (e.g. LD_PRELOAD of the clock shim, clock-steps scenario). */
  env?: Record<string, string>;
}

/** The store-call log preload (store-log.mjs): every member loads it, so the history check sees its calls. */
export const STORE_LOG_PRELOAD = fileURLToPath(new URL('./store-log.mjs', import.meta.url));

/** The member's compiled EtcdStore, which the preload patches: beside the member script, as tsc lays dist/ out. */
function storeModuleFor(script: string): string {
  const path = resolve(dirname(script), '../store/etcd/etcd.js');
  if (!existsSync(path)) throw new Error(`the store-call log patches ${path}, the member's EtcdStore, and it does not exist (build dist/ first)`);
  return path;
}

export { sleep } from '../support/wait.js';

/** A fault-injection script's view of the run. */
export class ChaosRun {
  readonly rng: () => number;
  readonly log: string[] = [];
  /** Every process ever started, in order. */
  readonly incarnations: FleetMember[] = [];
  /**
   * Exits nobody asked for. `started` false: the process could not start
   * (etcd unreachable at start-up is refused loudly, by design); true: a
   * running member gave up, which the suite counts as a defect.
   */
  readonly crashes: { instance: string; started: boolean; code: number | null; fatal: string | undefined }[] = [];
  readonly started = Date.now();
  private readonly current = new Map<string, FleetMember>();
  private readonly options = new Map<string, MemberOptions>();
  private readonly intended = new Set<FleetMember>();
  private finishing = false;
  faults = 0;

  constructor(
    readonly job: string,
    readonly settings: ChaosSettings,
    readonly auditor: Auditor,
    private readonly endpointsFor: (instance: string) => string[],
    readonly seed: number,
    /** Where each incarnation's store-call log is written (one file per process). */
    readonly storeLogDir: string,
  ) {
    this.rng = prng(seed);
  }

  /** A random integer in [lo, hi]. */
  between(lo: number, hi: number): number {
    return lo + Math.floor(this.rng() * (hi - lo + 1));
  }

  pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[Math.floor(this.rng() * xs.length)];
  }

  note(what: string): void {
    this.log.push(`${((Date.now() - this.started) / 1000).toFixed(2)}s ${what}`);
  }

  /** Counts one injected fault and logs it. */
  fault(what: string): void {
    this.faults++;
    this.note(what);
  }

  get done(): boolean {
    return this.auditor.jobTerminal;
  }

  /** Instances with a running process (paused ones included). */
  get live(): string[] {
    return [...this.current].filter(([, m]) => m.running).map(([i]) => i).sort();
  }

  member(instance: string): FleetMember | undefined {
    return this.current.get(instance);
  }

  /** Sets the drain behaviour `instance` runs with from its next start on. */
  configure(instance: string, options: MemberOptions): void {
    this.options.set(instance, options);
  }

  /** Starts (or starts again) `instance`, remembering its drain behaviour for restarts. */
  spawn(instance: string, options?: MemberOptions): FleetMember {
    if (options) this.options.set(instance, options);
    const o = this.options.get(instance) ?? {};
    const s = this.settings;
    const endpoints = this.endpointsFor(instance);
    const config: FleetProcessConfig & { endpoints: string[] } = {
      endpoint: endpoints[0]!, endpoints, job: this.job, instance, splits: s.splits, seed: s.seed,
      maxInFlight: s.maxInFlight, unitMs: s.unitMs, commitEvery: s.commitEvery, minUnits: s.minUnits, maxUnits: s.maxUnits,
      config: s.knobs, ...(s.layout ? { layout: s.layout } : {}), ...(o.drain ? { drain: o.drain } : {}), ...(o.slowDrainMs !== undefined ? { slowDrainMs: o.slowDrainMs } : {}),
    };
    const script = process.env.CHAOS_FLEET_SCRIPT;
    const storeLog = join(this.storeLogDir, `${instance}-${this.incarnations.length}.jsonl`);
    // Members log warnings to stderr (its tail shows in failure messages); CHAOS_LOG_LEVEL=info or debug for more.
    // Strict unhandled rejections (issue 28): a background promise nobody handles ends the member,
    // and any exit of a started member that is not a documented fatal fails the scenario (chaos.test.ts).
    // Every store call is logged (store-log.mjs) for the history check.
    const env = {
      SPLITFLEET_LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --unhandled-rejections=strict --import ${JSON.stringify(STORE_LOG_PRELOAD)}`.trim(),
      SPLITFLEET_CHAOS_STORE_LOG: storeLog,
      SPLITFLEET_CHAOS_STORE_MODULE: storeModuleFor(script ?? fleetProcessScript()),
      SPLITFLEET_CHAOS_INSTANCE: `${instance}.${this.incarnations.length}`,
      ...o.env,
    };
    const m = spawnFleetMember(config, script ? { script, env } : { env });
    this.current.set(instance, m);
    this.incarnations.push(m);
    void m.exited.then((x) => {
      if (this.intended.has(m) || m.has('verdict')) return;
      const fatal = m.eventsOf('fatal')[0];
      this.crashes.push({ instance, started: m.has('started'), code: x.code, fatal: fatal ? `${String(fatal.code)}: ${String(fatal.message)}` : undefined });
      this.note(`${instance} exited by itself (code ${x.code}, signal ${x.signal})${fatal ? `: ${String(fatal.code)} ${String(fatal.message)}` : ''}`);
      if (!this.finishing && this.current.get(instance) === m) {
        setTimeout(() => {
          if (!this.finishing && this.current.get(instance) === m) {
            this.note(`${instance} restarted by the supervisor`);
            this.spawn(instance);
          }
        }, 500);
      }
    });
    return m;
  }

  async kill(instance: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.current.get(instance);
    if (!m?.running) return;
    this.intended.add(m);
    this.fault(`${signal} ${instance} (holding ${this.auditor.heldBy(instance).length})`);
    await m.kill(signal);
  }

  /** SIGTERM: the member drains and releases everything, then exits. */
  async stopGracefully(instance: string): Promise<void> {
    const m = this.current.get(instance);
    if (!m?.running) return;
    this.intended.add(m);
    this.fault(`SIGTERM ${instance} (holding ${this.auditor.heldBy(instance).length})`);
    await m.stop(30_000);
  }

  pause(instance: string): void {
    const m = this.current.get(instance);
    if (!m?.running) return;
    this.fault(`SIGSTOP ${instance} (holding ${this.auditor.heldBy(instance).length})`);
    m.pause();
  }

  resume(instance: string): void {
    const m = this.current.get(instance);
    if (!m?.running) return;
    this.note(`SIGCONT ${instance}`);
    m.resume();
  }

  /** Waits for a member's event, bounded. */
  waitFor(instance: string, match: string | ((e: FleetEvent) => boolean), timeoutMs = 20_000): Promise<FleetEvent> {
    return this.current.get(instance)!.waitFor(match, timeoutMs);
  }

  /** Polls `check` every 50 ms until true, or throws naming `what` and describing the run. */
  async until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
    await waitUntil(`${what} (chaos run ${this.job})`, check, { timeoutMs, intervalMs: 50, describe: () => `\n${this.describe()}` });
  }

  /**
   * Injects faults with `step` at random gaps (ms in [minGap, maxGap]) until
   * the job is done, `maxFaults` faults were injected, or `budgetMs` passed.
   */
  async schedule(o: { minGap: number; maxGap: number; maxFaults: number; budgetMs: number; step: () => Promise<void> }): Promise<void> {
    const end = Date.now() + o.budgetMs;
    while (!this.done && this.faults < o.maxFaults && Date.now() < end) {
      const gap = this.between(o.minGap, o.maxGap);
      const wake = Date.now() + gap;
      while (!this.done && Date.now() < wake) await sleep(Math.min(50, wake - Date.now()));
      if (this.done) break;
      await o.step();
    }
  }

  /**
   * Waits for every split to be terminal on etcd and every running member to
   * exit with its verdict (resuming any paused one), then syncs the auditor.
   */
  async waitComplete(timeoutMs: number): Promise<number> {
    await this.until('every split to be terminal', () => this.done, timeoutMs);
    const completedAt = Date.now();
    for (const m of this.current.values()) m.resume();
    // A member whose connection died silently (proxy-blackhole) sees the verdict only once
    // keepalive has dropped that connection and its watch has resumed: allow for it.
    await this.until('every running member to exit after the verdict', () => [...this.current.values()].every((m) => !m.running), 90_000);
    await this.auditor.sync();
    return completedAt - this.started;
  }

  /** Every processed unit and lane event of every incarnation. */
  ledger(): Ledger {
    return Ledger.of(this.incarnations);
  }

  /** Every line of every store-call log written in this run (the members' and the operator's). */
  storeLogLines(): string[] {
    const lines: string[] = [];
    for (const f of readdirSync(this.storeLogDir).sort()) if (f.endsWith('.jsonl')) lines.push(...readFileSync(join(this.storeLogDir, f), 'utf8').split('\n'));
    return lines;
  }

  /** Verdicts reported, by value. */
  verdicts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const m of this.incarnations) for (const e of m.eventsOf('verdict')) out[String(e.verdict)] = (out[String(e.verdict)] ?? 0) + 1;
    return out;
  }

  /** Kills whatever still runs. */
  async finish(): Promise<void> {
    this.finishing = true;
    await Promise.all([...this.current.values()].map((m) => m.kill('SIGKILL')));
  }

  describe(): string {
    const members = [...this.current.values()].map((m) => m.describe(6)).join('\n');
    return `seed ${this.seed}; faults:\n  ${this.log.join('\n  ')}\nstore: ${this.auditor.describeState()}\nmembers:\n${members}`;
  }
}
