/**
 * The demo's fleet: W members running the synthetic job, started, killed and
 * stalled on command. Two kinds behind one interface:
 *
 * - `MemoryFleet`: in-process coordinators on one embedded MemoryStore (no
 *   etcd needed); a kill is a crash (no release, no revoke: see faults.ts), a
 *   stall is a pause of the member's clock and store connection.
 * - `ProcessFleet`: one OS process per member (fleet-process.js) on etcd; a
 *   kill is SIGKILL, a stall is SIGSTOP then SIGCONT.
 *
 * Both report every processed unit and lane event to the sink (the ledger and
 * the live view). Neither decides anything about the job: the coordinators do.
 */
import {
  MemoryStore, Metrics, openStore, silentLogger, startCoordinator, type Coordinator, type Store,
} from '../index.js';
import type { FleetProcessConfig } from '../testing/fleet-config.js';
import { FleetMember } from '../testing/fleet-member.js';
import { syntheticMember } from '../testing/synthetic.js';
import { FaultClock, FaultStore } from '../testing/faults.js';

/** Everything that defines the demo's job and how its members run it. */
export interface DemoJobSettings {
  job: string;
  root: string;
  splits: number;
  seed: number;
  /** Lane budget (maxInFlight) of every member. */
  lanes: number;
  /** Milliseconds per unit (1000 / rate). */
  unitMs: number;
  /** Commit progress every this many units. */
  commitEvery: number;
  /** Coordinator knobs (the demo's short timings). */
  config: {
    leaseDurationMs: number;
    opTimeoutMs: number;
    rebalanceDelayMs: number;
    drainDeadlineMs: number;
    reconcileIntervalMs: number;
  };
  /** Split ids that fail every attempt. */
  poison: string[];
  /** How the job keeps its splits on the store (decision 0037): 'keys', or 'packed' queue pages. */
  layout: 'keys' | 'packed';
}

export type LaneEvent = { ev: string; id: string; [k: string]: unknown };

export interface FleetSink {
  /** One processed unit (the ledger). */
  unit(id: string, unit: number, epoch: number, instance: string): void;
  /** A lane event of the paced handler: claimed, drained, declined, completed, failed. */
  lane(instance: string, event: LaneEvent): void;
  /** Something worth a line in the log (a member exiting, a fatal error). */
  note(text: string): void;
}

export type MemberState = 'running' | 'stalled' | 'killed' | 'finished' | 'failed';

export interface Fleet {
  readonly kind: 'memory' | 'etcd';
  /** The store the observer watches (the shared MemoryStore, or a connection of the demo's own). */
  readonly store: Store;
  members(): { instance: string; state: MemberState }[];
  /** Starts one member; resolves once it runs. */
  start(instance: string): Promise<void>;
  /** SIGKILL, or a crash in process. */
  kill(instance: string): void;
  /** SIGSTOP then SIGCONT after `ms`, or a pause in process. */
  stall(instance: string, ms: number): void;
  /**
   * Revocations by outcome from the coordinators' counters, summed over every member that ever ran
   * (declined counts as forced). The cooperative figure also counts lanes drained by a final stop().
   */
  revocations(): Promise<{ cooperative: number; forced: number }>;
  /** Waits up to `ms` for every live member to finish by itself, then stops the rest. */
  finish(ms: number): Promise<void>;
  /** Releases everything (the store, any process left). */
  close(): Promise<void>;
}

/** Resolves when `p` settles or after `ms`, whichever is first, leaving no timer behind. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.then(() => undefined, () => undefined), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

// ---- in process, on the MemoryStore ----------------------------------------------------

interface LocalMember {
  instance: string;
  state: MemberState;
  clock: FaultClock;
  store: FaultStore;
  metrics: Metrics;
  coordinator: Coordinator;
  settled: Promise<void>;
}

export class MemoryFleet implements Fleet {
  readonly kind = 'memory' as const;
  readonly store = new MemoryStore();
  private readonly all = new Map<string, LocalMember>();

  constructor(private readonly settings: DemoJobSettings, private readonly sink: FleetSink) {}

  members(): { instance: string; state: MemberState }[] {
    return [...this.all.values()].map((m) => ({ instance: m.instance, state: m.state }));
  }

  async start(instance: string): Promise<void> {
    const s = this.settings;
    const clock = new FaultClock();
    const store = new FaultStore(this.store, clock);
    const metrics = new Metrics();
    const coordinator = await startCoordinator({
      store,
      clock,
      metrics,
      logger: silentLogger,
      job: s.job,
      root: s.root,
      instance,
      maxInFlight: s.lanes,
      layout: s.layout,
      ...s.config,
      ...syntheticMember({ splits: s.splits, seed: s.seed, unitMs: s.unitMs, commitEvery: s.commitEvery, poison: s.poison }, {
        clock,
        onUnit: (id, unit, epoch) => this.sink.unit(id, unit, epoch, instance),
        onEvent: (e) => this.sink.lane(instance, e),
      }),
    });
    const member: LocalMember = { instance, state: 'running', clock, store, metrics, coordinator, settled: Promise.resolve() };
    member.settled = coordinator.done.then(
      () => {
        if (member.state !== 'killed') member.state = 'finished';
      },
      (e: unknown) => {
        if (member.state === 'killed') return;
        member.state = 'failed';
        this.sink.note(`${instance} stopped on an error: ${(e as Error).message}`);
      },
    );
    this.all.set(instance, member);
  }

  kill(instance: string): void {
    const m = this.all.get(instance);
    if (!m || m.state === 'killed') return;
    m.state = 'killed';
    m.clock.crash();
    m.store.crash();
  }

  stall(instance: string, ms: number): void {
    const m = this.all.get(instance);
    if (!m || m.state !== 'running') return;
    m.state = 'stalled';
    m.clock.pause();
    m.store.pause();
    setTimeout(() => {
      if (m.state !== 'stalled') return;
      m.state = 'running';
      m.store.resume();
      void m.clock.resume();
    }, ms);
  }

  async revocations(): Promise<{ cooperative: number; forced: number }> {
    let cooperative = 0;
    let forced = 0;
    for (const m of this.all.values()) {
      for (const v of (await m.metrics.revocations.get()).values) {
        if (v.labels.outcome === 'cooperative') cooperative += v.value;
        else forced += v.value;
      }
    }
    return { cooperative, forced };
  }

  async finish(ms: number): Promise<void> {
    const live = [...this.all.values()].filter((m) => m.state === 'running' || m.state === 'stalled');
    await within(Promise.all(live.map((m) => m.settled)), ms);
    for (const m of live) {
      if (m.state === 'running' || m.state === 'stalled') {
        if (m.state === 'stalled') {
          m.store.resume();
          await m.clock.resume();
        }
        await m.coordinator.close().catch(() => undefined);
        m.state = 'finished';
      }
    }
  }

  async close(): Promise<void> {
    for (const m of this.all.values()) if (m.state === 'running' || m.state === 'stalled') await m.coordinator.close().catch(() => undefined);
    await this.store.close();
  }
}

// ---- one OS process per member, on etcd --------------------------------------------------

interface ChildMember {
  instance: string;
  state: MemberState;
  process: FleetMember;
  stats: { cooperative: number; forced: number; declined: number };
}

export class ProcessFleet implements Fleet {
  readonly kind = 'etcd' as const;
  private readonly all = new Map<string, ChildMember>();

  /** The fleet on etcd at `endpoints`, with the demo's own connection for the observer. */
  static async open(endpoints: string[], settings: DemoJobSettings, sink: FleetSink): Promise<ProcessFleet> {
    return new ProcessFleet(await openStore({ backend: 'etcd', endpoints, opTimeoutMs: 3000 }), endpoints, settings, sink);
  }

  private constructor(
    readonly store: Store, private readonly endpoints: string[], private readonly settings: DemoJobSettings, private readonly sink: FleetSink,
  ) {}

  members(): { instance: string; state: MemberState }[] {
    return [...this.all.values()].map((m) => ({ instance: m.instance, state: m.state }));
  }

  start(instance: string): Promise<void> {
    const s = this.settings;
    const config: FleetProcessConfig = {
      endpoint: this.endpoints[0]!,
      endpoints: this.endpoints,
      job: s.job,
      root: s.root,
      instance,
      splits: s.splits,
      seed: s.seed,
      maxInFlight: s.lanes,
      unitMs: s.unitMs,
      commitEvery: s.commitEvery,
      config: s.config,
      poison: s.poison,
      layout: s.layout,
      stats: true,
      stopWithParent: true,
    };
    // Its own process group: a terminal's Ctrl-C reaches the demo only, which stops the workers
    // gracefully (SIGTERM: drain, release, resign) rather than the terminal killing them mid-write.
    // Its stdin is our pipe: if the demo dies without stopping it, the pipe closes and it stops too
    // (so it is not SIGKILLed when the demo exits: untracked).
    const child = new FleetMember(config, { detached: true, stdinPipe: true, track: false });
    const member: ChildMember = { instance, state: 'running', process: child, stats: { cooperative: 0, forced: 0, declined: 0 } };
    this.all.set(instance, member);
    return new Promise<void>((resolve, reject) => {
      let started = false;
      child.follow((e) => {
        switch (e.ev) {
          case 'unit':
            this.sink.unit(String(e.id), Number(e.unit), Number(e.epoch), instance);
            break;
          case 'started':
            started = true;
            resolve();
            break;
          case 'stats':
            member.stats = { cooperative: Number(e.cooperative), forced: Number(e.forced), declined: Number(e.declined) };
            break;
          case 'fatal':
            this.sink.note(`${instance} stopped on an error: ${String(e.code ?? '')} ${String(e.message ?? '')}`.trim());
            if (!started) reject(new Error(`${instance} could not start: ${String(e.message ?? 'unknown error')}`));
            break;
          case 'claimed': case 'drained': case 'declined': case 'completed': case 'failed':
            this.sink.lane(instance, e as LaneEvent);
            break;
          case 'session-lost':
            this.sink.note(`${instance} lost its session (${String(e.reason ?? '')}): its lanes are dropped and it rejoins`);
            break;
          default:
            break;
        }
      });
      void child.exited.then(({ code, signal }) => {
        const stderr = child.stderr.slice(-2000);
        if (member.state === 'running' || member.state === 'stalled') {
          member.state = code === 0 ? 'finished' : 'failed';
          if (code !== 0) this.sink.note(`${instance} exited (${signal ?? `code ${code}`})${stderr ? `: ${stderr.trim().split('\n').pop()}` : ''}`);
        }
        if (!started) reject(new Error(`${instance} exited before starting (${signal ?? `code ${code}`}): ${stderr.trim() || 'no output'}`));
      });
    });
  }

  kill(instance: string): void {
    const m = this.all.get(instance);
    if (!m || m.state === 'killed' || m.state === 'finished') return;
    m.state = 'killed';
    void m.process.kill('SIGKILL');
  }

  stall(instance: string, ms: number): void {
    const m = this.all.get(instance);
    if (!m || m.state !== 'running') return;
    m.state = 'stalled';
    m.process.pause();
    setTimeout(() => {
      if (m.state !== 'stalled') return;
      m.state = 'running';
      m.process.resume();
    }, ms);
  }

  async revocations(): Promise<{ cooperative: number; forced: number }> {
    let cooperative = 0;
    let forced = 0;
    for (const m of this.all.values()) {
      cooperative += m.stats.cooperative;
      forced += m.stats.forced + m.stats.declined;
    }
    return { cooperative, forced };
  }

  async finish(ms: number): Promise<void> {
    const live = [...this.all.values()].filter((m) => m.state === 'running' || m.state === 'stalled');
    await within(Promise.all(live.map((m) => m.process.exited)), ms);
    // SIGTERM (SIGCONT first when stalled), SIGKILL after 5 s.
    const left = live.filter((m) => m.process.running);
    await Promise.all(left.map((m) => m.process.stop(5000)));
    // Every stdout line is in: the ledger is complete.
    await Promise.all([...this.all.values()].map((m) => m.process.exited));
  }

  async close(): Promise<void> {
    for (const m of this.all.values()) if (m.process.running) void m.process.kill('SIGKILL');
    await this.store.close();
  }
}
