/**
 * Fleet members as OS processes, for tests and benches that kill, pause and
 * restart workers: spawns `node dist/src/demo/fleet-process.js` (the compiled
 * fleet member; run `npx tsc -p tsconfig.json` first), parses the JSON lines
 * it writes on stdout, and lets a caller wait for an event, SIGKILL, SIGSTOP /
 * SIGCONT, or stop it gracefully (SIGTERM).
 *
 * Invariants: every spawned process is tracked and SIGKILLed at the latest
 * when this process exits (`killAllFleetMembers()` does it earlier, for an
 * afterEach/afterAll); a missing `dist/` is a loud error naming the command to
 * run, never a skipped test; waits are bounded and their failure message shows
 * the member's last events and stderr. Framework-free (no vitest import), so
 * benches can use it too.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** SPLITFLEET_FLEET, as `src/demo/fleet-process.ts` reads it (mirrored here: that module runs on import). */
export interface FleetProcessConfig {
  /** etcd client URL. */
  endpoint: string;
  /** Several client URLs (an etcd cluster); used instead of `endpoint` when given. */
  endpoints?: string[];
  job: string;
  instance: string;
  /** Number of synthetic splits the planner enumerates (a final plan). */
  splits: number;
  /** Seed of the synthetic split sizes. */
  seed: number;
  maxInFlight: number;
  /** Milliseconds per unit of work. */
  unitMs: number;
  /** Commit progress every this many units. */
  commitEvery: number;
  drain?: 'cooperate' | 'decline' | 'slow' | 'ignore';
  slowDrainMs?: number;
  /** Units of the smallest / largest split (both equal gives uniform splits). */
  minUnits?: number;
  maxUnits?: number;
  /** Numeric coordinator knobs: leaseDurationMs, opTimeoutMs, rebalanceDelayMs, … */
  config?: Record<string, number>;
  /** Act as a newer build: every record this member writes carries these extra fields (a `minor` among them). */
  recordExtras?: Record<string, unknown>;
}

/**
 * One line of a member's stdout. Known `ev` values: started, leading,
 * not-leading, claimed {id, epoch, progress}, unit {id, unit, epoch},
 * drained {id, progress}, declined {id, progress}, completed {id, units},
 * verdict {verdict}, fatal {code, message}, stopped. A line that is not JSON
 * is kept as {ev: 'raw', line}.
 */
export interface FleetEvent {
  ev: string;
  /** Wall-clock ms when the member wrote it (absent on raw lines). */
  t?: number;
  id?: string;
  epoch?: number;
  [field: string]: unknown;
}

export interface FleetExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnOptions {
  /** Extra environment (e.g. SPLITFLEET_LOG_LEVEL: 'debug' to see the coordinator's log on stderr). */
  env?: Record<string, string>;
  /** Another compiled script speaking the same protocol; default the fleet member. */
  script?: string;
}

const tracked = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of tracked) child.kill('SIGKILL');
});

/** The repository root: the nearest ancestor holding splitfleet's package.json (works from test/ and dist/). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'splitfleet') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the splitfleet repository root above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

/** Path of the compiled fleet member; throws with the build command when it is missing. */
export function fleetProcessScript(): string {
  const script = resolve(repoRoot(), 'dist/src/demo/fleet-process.js');
  if (!existsSync(script)) {
    throw new Error(
      `fleet process tests run the compiled fleet member, and ${script} does not exist: ` +
        `run 'npx tsc -p tsconfig.json' (or 'npm run build') in ${repoRoot()} first`,
    );
  }
  return script;
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
  private exit: FleetExit | undefined;
  private paused = false;

  constructor(config: FleetProcessConfig, options: SpawnOptions = {}) {
    this.config = config;
    this.instance = config.instance;
    const script = options.script ?? fleetProcessScript();
    this.child = spawn(process.execPath, [script], {
      env: { ...process.env, ...options.env, SPLITFLEET_FLEET: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    tracked.add(this.child);
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

/** Spawns one member per instance id, sharing `base`. */
export function spawnFleet(base: Omit<FleetProcessConfig, 'instance'>, instances: string[], options: SpawnOptions = {}): FleetMember[] {
  return instances.map((instance) => spawnFleetMember({ ...base, instance }, options));
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
