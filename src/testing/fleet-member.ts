/**
 * The one spawner of fleet member processes (fleet-process.js), for the demo
 * (`splitfleet demo --etcd`) and every test suite and bench that kills,
 * pauses and restarts workers: spawns the member with its SPLITFLEET_FLEET
 * configuration, parses the JSON lines it writes on stdout, and lets a caller
 * follow its events, wait for one, SIGKILL, SIGSTOP / SIGCONT, or stop it
 * gracefully (SIGTERM).
 *
 * Invariants: every tracked process (the default) is SIGKILLed at the latest
 * when this process exits (`killAllFleetMembers()` does it earlier); waits
 * are bounded and their failure message shows the member's last events and
 * stderr. Framework-free; it decides nothing about the job. Internal: not
 * exported by src/testing/index.ts (the demo and the suites import it here).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FleetEvent, FleetProcessConfig } from './fleet-config.js';

export type { FleetEvent, FleetProcessConfig } from './fleet-config.js';

export interface FleetExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnOptions {
  /** Extra environment (e.g. SPLITFLEET_LOG_LEVEL: 'debug' to see the coordinator's log on stderr). */
  env?: Record<string, string>;
  /** Another compiled script speaking the same protocol; default the fleet member next to this module. */
  script?: string;
  /** Its own process group (the demo: a terminal's Ctrl-C reaches the parent only). */
  detached?: boolean;
  /** Give the child a stdin pipe that closes when this process dies (for `stopWithParent`). */
  stdinPipe?: boolean;
  /** SIGKILL it when this process exits (default true; the demo's members stop through their stdin instead). */
  track?: boolean;
}

const tracked = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of tracked) child.kill('SIGKILL');
});

/** The compiled fleet member, next to this module (under dist/ once built). */
export function fleetProcessPath(): string {
  return fileURLToPath(new URL('./fleet-process.js', import.meta.url));
}

interface Waiter {
  match: (e: FleetEvent) => boolean;
  resolve: (e: FleetEvent) => void;
}

/** A running (or exited) fleet member process. */
export class FleetMember {
  readonly instance: string;
  readonly config: FleetProcessConfig;
  /** Every event so far, in order. */
  readonly events: FleetEvent[] = [];
  /** Resolves when the process has exited. */
  readonly exited: Promise<FleetExit>;
  private readonly child: ChildProcess;
  private stderrTail = '';
  private partial = '';
  private waiters: Waiter[] = [];
  private readonly listeners: ((e: FleetEvent) => void)[] = [];
  private exit: FleetExit | undefined;
  private paused = false;

  constructor(config: FleetProcessConfig, options: SpawnOptions = {}) {
    this.config = config;
    this.instance = config.instance;
    const script = options.script ?? fleetProcessPath();
    this.child = spawn(process.execPath, [script], {
      env: { ...process.env, ...options.env, SPLITFLEET_FLEET: JSON.stringify(config) },
      stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      ...(options.detached ? { detached: true } : {}),
    });
    const track = options.track ?? true;
    if (track) tracked.add(this.child);
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => this.onStdout(chunk));
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4000);
    });
    this.exited = new Promise<FleetExit>((resolve) => {
      // 'close' comes after stdout has ended, so every line is parsed before `exited` resolves.
      this.child.once('close', (code, signal) => {
        tracked.delete(this.child);
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** True until the process exits. */
  get running(): boolean {
    return this.exit === undefined;
  }

  /** How it exited, once it has. */
  get exitStatus(): FleetExit | undefined {
    return this.exit;
  }

  /** The last 4 000 characters of stderr. */
  get stderr(): string {
    return this.stderrTail;
  }

  /** Calls `fn` with every event, those already seen first, then each as it is parsed. */
  follow(fn: (e: FleetEvent) => void): void {
    for (const e of this.events) fn(e);
    this.listeners.push(fn);
  }

  /** Events named `ev` (optionally of split `id`). */
  eventsOf(ev: string, id?: string): FleetEvent[] {
    return this.events.filter((e) => e.ev === ev && (id === undefined || e.id === id));
  }

  /** True once an event named `ev` was seen. */
  has(ev: string): boolean {
    return this.events.some((e) => e.ev === ev);
  }

  /**
   * Resolves with the first event (already seen, or future) that matches: an
   * `ev` name or a predicate. Rejects after `timeoutMs`, or when the process
   * exits first, with the member's last events and stderr in the message.
   */
  waitFor(match: string | ((e: FleetEvent) => boolean), timeoutMs = 15_000, what?: string): Promise<FleetEvent> {
    const test = typeof match === 'string' ? (e: FleetEvent) => e.ev === match : match;
    const label = what ?? (typeof match === 'string' ? `event '${match}'` : 'a matching event');
    const seen = this.events.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise<FleetEvent>((resolve, reject) => {
      const waiter: Waiter = {
        match: test,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      };
      const fail = (why: string) => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`fleet member ${this.instance} (pid ${this.pid}): ${why} while waiting for ${label}\n${this.describe()}`));
      };
      const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs);
      this.waiters.push(waiter);
      void this.exited.then((x) => {
        if (!this.waiters.includes(waiter)) return;
        clearTimeout(timer);
        fail(`exited (code ${x.code}, signal ${x.signal})`);
      });
    });
  }

  /** Sends `signal` (default SIGKILL) and resolves once the process has exited. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<FleetExit> {
    if (this.exit) return this.exit;
    if (this.paused && signal !== 'SIGKILL') this.resume();
    this.child.kill(signal);
    return this.exited;
  }

  /** SIGSTOP: the process freezes (timers, renewals, handlers), as a wedged or descheduled pod would. */
  pause(): void {
    if (this.exit) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    if (this.exit) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  /** Graceful stop (SIGTERM: drain, release, resign); SIGKILL if it has not exited within `timeoutMs`. */
  async stop(timeoutMs = 10_000): Promise<FleetExit> {
    if (this.exit) return this.exit;
    if (this.paused) this.resume();
    this.child.kill('SIGTERM');
    const hard = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(hard);
    }
  }

  /** The last events and stderr, for failure messages. */
  describe(lastEvents = 12): string {
    const tail = this.events.slice(-lastEvents).map((e) => JSON.stringify(e)).join('\n  ');
    const status = this.exit ? `exited (code ${this.exit.code}, signal ${this.exit.signal})` : this.paused ? 'paused' : 'running';
    return `  [${this.instance}: ${status}, ${this.events.length} events]\n  ${tail || '(no events)'}\n  stderr: ${this.stderrTail.trim() || '(empty)'}`;
  }

  private onStdout(chunk: string): void {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      let e: FleetEvent;
      try {
        const parsed: unknown = JSON.parse(line);
        e = parsed && typeof parsed === 'object' && typeof (parsed as FleetEvent).ev === 'string'
          ? (parsed as FleetEvent)
          : { ev: 'raw', line };
      } catch {
        e = { ev: 'raw', line };
      }
      this.events.push(e);
      for (const fn of this.listeners) fn(e);
      for (const w of [...this.waiters]) {
        if (w.match(e)) {
          this.waiters = this.waiters.filter((x) => x !== w);
          w.resolve(e);
        }
      }
    }
  }
}

/** Spawns one fleet member. */
export function spawnFleetMember(config: FleetProcessConfig, options: SpawnOptions = {}): FleetMember {
  return new FleetMember(config, options);
}

/** SIGKILLs every member this process spawned that is still running (use in afterEach/afterAll). */
export async function killAllFleetMembers(): Promise<void> {
  const children = [...tracked];
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}
