/**
 * The benches' one way to run the processes of a fleet (issue 51): a child
 * Node process given its configuration as JSON in an environment variable,
 * answering with JSON lines on stdout (`{ t, ev, … }`, kept in `lines`; a
 * line that is not JSON joins the stderr tail), the last 4,000 characters of
 * its stderr kept for the error that names it. Every child still running is
 * killed (SIGKILL) when this process exits or is interrupted, so a failed
 * run leaves no fleet behind. bench/fleet.ts (fleet-host.ts) and
 * bench/protocol.ts (protocol-member.ts) run theirs through it.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';

export interface Line { t: number; ev: string; [k: string]: any }

export interface FleetChildOptions {
  /** The compiled script to run. */
  script: string;
  /** The environment variable that carries `config` as JSON. */
  envVar: string;
  config: unknown;
  /** Node's flags for the child (`--max-old-space-size=…`, `--expose-gc`, …). */
  execArgv?: readonly string[];
  /** An IPC channel, for a parent that sends the child messages (fork). */
  ipc?: boolean;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    process.stderr.write(`${sig}: stopping ${live.size} child process(es)\n`);
    process.exit(130); // the 'exit' handlers kill the children, and etcd (bench/etcd.ts)
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One process of a bench's fleet. */
export class FleetChild {
  readonly lines: Line[] = [];
  readonly proc: ChildProcess;
  readonly spawnedAt = Date.now();
  stderr = '';
  /** The exit code or signal, once it has exited. */
  exited: string | undefined;
  private partial = '';

  constructor(o: FleetChildOptions) {
    const env = { ...process.env, [o.envVar]: JSON.stringify(o.config) };
    this.proc = o.ipc === true
      ? fork(o.script, [], { env, execArgv: [...(o.execArgv ?? [])], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
      : spawn(process.execPath, [...(o.execArgv ?? []), o.script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(this.proc);
    this.proc.once('exit', (code, signal) => {
      live.delete(this.proc);
      this.exited = String(code ?? signal);
    });
    this.proc.stdout!.on('data', (c: Buffer) => {
      const parts = (this.partial + c.toString()).split('\n');
      this.partial = parts.pop() ?? '';
      for (const p of parts) {
        if (!p.trim()) continue;
        let line: Line;
        try {
          line = JSON.parse(p) as Line;
        } catch {
          this.stderr = (this.stderr + p).slice(-4000);
          continue;
        }
        this.lines.push(line);
        this.onLine(line);
      }
    });
    this.proc.stderr!.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString()).slice(-4000)));
  }

  /** Called with each line as it arrives; a bench overrides it to report a line at once. */
  protected onLine(_line: Line): void {}

  find(pred: (l: Line) => boolean): Line | undefined {
    return this.lines.find(pred);
  }

  /** The first line that satisfies `pred`, polled every 20 ms; throws on a `fatal` line or after `timeoutMs`, with the stderr tail. */
  async waitFor(what: string, pred: (l: Line) => boolean, timeoutMs: number): Promise<Line> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const fatal = this.lines.find((l) => l.ev === 'fatal');
      if (fatal) throw new Error(`${what}: the child reported fatal ${JSON.stringify(fatal)}\n${this.stderr}`);
      const hit = this.lines.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${this.stderr}`);
      await sleep(20);
    }
  }

  /** SIGKILL (or `signal`), unless it has already exited. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.exited !== undefined) return;
    const gone = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.proc.kill('SIGTERM');
    await Promise.race([gone, sleep(graceMs)]);
    if (this.exited === undefined) this.proc.kill('SIGKILL');
  }
}
