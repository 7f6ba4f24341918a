/**
 * Faults below the fleet, for the etcd chaos scenarios (etcd-scenarios.ts):
 *
 * - `PeerIsolation`: a network namespace joined to the host by two veth
 *   pairs on private addresses, one for an etcd member's client traffic and
 *   one for its peer traffic. `cut()` takes the peer link down inside the
 *   namespace: the member is cut off from its peers (its dials fail, theirs
 *   go unanswered) while its clients still reach it. Nothing leaves the
 *   machine: the addresses live on the two veth pairs only.
 * - `stallFsync(pid, ms)`: strace attached to a running etcd, delaying every
 *   fsync and fdatasync by `ms` until `stop()` detaches it (a disk whose
 *   flushes stall). An LD_PRELOAD shim cannot do this: etcd is Go, whose
 *   syscalls do not go through libc.
 * - `ClockShim`: clock-shim.c compiled with gcc at test time, loaded by a
 *   fleet member with LD_PRELOAD, its wall clock stepped through a control
 *   file per instance (monotonic clocks untouched, as a real step leaves them).
 *
 * Invariants: a missing tool (ip, strace, gcc) is a loud failure naming the
 * package, never a skip; every namespace, strace and temp file made here is
 * removed by `destroy()`/`stop()` and, at the latest, when this process exits.
 * Needs root (namespaces, ptrace), as the CI container and the dev machine have.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '../support/wait.js';

const PACKAGES: Record<string, string> = { ip: 'iproute2', strace: 'strace', gcc: 'gcc' };

/** Fails loudly when a tool the etcd chaos scenarios need is missing. */
export function requireTool(tool: 'ip' | 'strace' | 'gcc'): void {
  try {
    execFileSync(tool, tool === 'ip' ? ['-V'] : ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error(`the etcd chaos scenarios need '${tool}' (apt-get install ${PACKAGES[tool]}); they are never skipped`);
  }
}

const cleanups = new Set<() => void>();
process.on('exit', () => {
  for (const f of cleanups) f();
});

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A namespace for one etcd member, its client and peer links (see the file's header). */
export class PeerIsolation {
  readonly ns: string;
  /** The member's client address (namespace side of the client link). */
  readonly clientAddress: string;
  /** The member's peer address (namespace side of the peer link). */
  readonly peerAddress: string;
  /** Where the other members listen for peers: the host side of the peer link. */
  readonly hostPeerAddress: string;
  private cutNow = false;
  private readonly cleanup = () => this.remove();

  private constructor(tag: number) {
    this.ns = `sfchaos${process.pid}`;
    this.clientAddress = `10.213.${tag}.2`;
    this.peerAddress = `10.214.${tag}.2`;
    this.hostPeerAddress = `10.214.${tag}.1`;
  }

  /** Creates the namespace and both links. */
  static create(): PeerIsolation {
    requireTool('ip');
    const p = new PeerIsolation((process.pid % 250) + 1);
    const n = p.ns;
    p.remove(); // a leftover of this pid's earlier run
    cleanups.add(p.cleanup);
    try {
      ip('netns', 'add', n);
      ip('netns', 'exec', n, 'ip', 'link', 'set', 'lo', 'up');
      for (const [link, net] of [['c', '10.213'], ['p', '10.214']] as const) {
        const tag = p.clientAddress.split('.')[2];
        ip('link', 'add', `${n}${link}h`, 'type', 'veth', 'peer', 'name', `${n}${link}n`);
        ip('link', 'set', `${n}${link}n`, 'netns', n);
        ip('addr', 'add', `${net}.${tag}.1/24`, 'dev', `${n}${link}h`);
        ip('link', 'set', `${n}${link}h`, 'up');
        ip('netns', 'exec', n, 'ip', 'addr', 'add', `${net}.${tag}.2/24`, 'dev', `${n}${link}n`);
        ip('netns', 'exec', n, 'ip', 'link', 'set', `${n}${link}n`, 'up');
      }
    } catch (e) {
      p.remove();
      throw new Error(`could not make network namespace ${n} (root and iproute2 needed): ${(e as Error).message}`);
    }
    return p;
  }

  /** The command prefix that runs a program inside the namespace (it execs, so the pid is the program's). */
  get wrap(): string[] {
    return ['ip', 'netns', 'exec', this.ns];
  }

  get isCut(): boolean {
    return this.cutNow;
  }

  /** Takes the peer link down inside the namespace: no peer traffic in either direction; clients unaffected. */
  cut(): void {
    ip('netns', 'exec', this.ns, 'ip', 'link', 'set', `${this.ns}pn`, 'down');
    this.cutNow = true;
  }

  heal(): void {
    ip('netns', 'exec', this.ns, 'ip', 'link', 'set', `${this.ns}pn`, 'up');
    this.cutNow = false;
  }

  /** Deletes the namespace (its processes must be gone) and the host ends of its links. */
  destroy(): void {
    this.remove();
    cleanups.delete(this.cleanup);
  }

  private remove(): void {
    for (const args of [['netns', 'del', this.ns], ['link', 'del', `${this.ns}ch`], ['link', 'del', `${this.ns}ph`]]) {
      try {
        ip(...args);
      } catch {
        // already gone
      }
    }
  }
}

/** Whether `pid` is being traced (strace attached to it). */
function traced(pid: number): boolean {
  try {
    return /TracerPid:\s*[1-9]/.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Delays every fsync and fdatasync of process `pid` (all its threads) by `delayMs`
 * from now until `stop()`. Resolves once strace is attached.
 */
export async function stallFsync(pid: number, delayMs: number): Promise<{ stop(): Promise<void> }> {
  requireTool('strace');
  const child: ChildProcess = spawn('strace', [
    '-f', '-qq', '-o', '/dev/null', '-p', String(pid),
    '-e', 'trace=fsync,fdatasync', '-e', `inject=fsync,fdatasync:delay_enter=${delayMs * 1000}`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const kill = () => child.kill('SIGKILL');
  cleanups.add(kill);
  const deadline = Date.now() + 5000;
  while (!traced(pid)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      cleanups.delete(kill);
      throw new Error(`strace could not attach to ${pid}: ${err || `exit ${child.exitCode}`}`);
    }
    await sleep(20);
  }
  return {
    stop: async () => {
      cleanups.delete(kill);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGINT'); // detaches: the tracee resumes, a delayed call completes
      await gone;
    },
  };
}

/** clock-shim.c compiled once into a temp dir, and one control file per instance. */
export class ClockShim {
  readonly library: string;
  private readonly dir: string;

  constructor() {
    requireTool('gcc');
    this.dir = mkdtempSync(join(tmpdir(), 'splitfleet-clock-'));
    this.library = join(this.dir, 'clock-shim.so');
    const source = fileURLToPath(new URL('./clock-shim.c', import.meta.url));
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-o', this.library, source, '-ldl'], { stdio: ['ignore', 'ignore', 'pipe'] });
    cleanups.add(() => rmSync(this.dir, { recursive: true, force: true }));
  }

  /** The control file of `instance`'s clock. */
  file(instance: string): string {
    return join(this.dir, `${instance}.offset`);
  }

  /**
   * The environment a member runs with to have its wall clock stepped through `file(instance)`
   * (0 at first; a restart keeps the step, as a machine's clock stays wrong across a restart).
   */
  env(instance: string): Record<string, string> {
    if (!existsSync(this.file(instance))) this.set(instance, 0);
    return { LD_PRELOAD: this.library, SPLITFLEET_CHAOS_CLOCK_FILE: this.file(instance) };
  }

  /** Steps `instance`'s wall clock to the real one plus `offsetMs` (within 20 ms). */
  set(instance: string, offsetMs: number): void {
    writeFileSync(this.file(instance), String(Math.round(offsetMs)));
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
