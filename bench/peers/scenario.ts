import { writeFileSync } from 'node:fs';
/**
 * One scenario of bench:peers run by one system: prepare the store (BullMQ:
 * one job per item; locks: the `todo` set; splitfleet: nothing, its leader
 * plans), start the workers as OS processes, send `go` to all at once (t0),
 * apply the scenario's fault at its share of the work (SIGKILL, SIGSTOP and
 * SIGCONT, a joiner), stop when every item (and every residual a division
 * made) is done (or at the cap), SIGKILL the workers and measure from their lines.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { peerItems, type ItemsSpec, type PeerLine, type PeerWorkerConfig, type SystemName } from './items.js';
import { measure, type PeerFigures } from './measure.js';

export interface Scenario {
  name: 'skewed' | 'kill' | 'stall' | 'join' | 'tiny' | 'giant';
  items: ItemsSpec;
  workers: number;
  lanes: number;
  unitMs: number;
  commitEvery: number;
  leaseMs: number;
  /** Share of the units processed when the fault (kill, stall, join) happens. */
  at?: number;
  /** stall: how long the worker stays SIGSTOPped. */
  stallMs?: number;
  /** Give up after this long (the figures say complete: false). */
  capMs: number;
  /** measure's lower bound: 'lanes' for total / lanes alone (giant: its item is meant to be divided). */
  bound?: 'lanes';
}

export interface Endpoints {
  etcd: string;
  redis: string;
}

const SCRIPTS: Record<SystemName, string> = {
  splitfleet: 'worker-splitfleet.js',
  bullmq: 'worker-bullmq.js',
  'redis-locks': 'worker-redis-locks.js',
};

class PeerProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  stderr = '';
  private partial = '';

  constructor(cfg: PeerWorkerConfig, onLine: (l: PeerLine) => void) {
    const script = fileURLToPath(new URL(`./${SCRIPTS[cfg.system]}`, import.meta.url));
    this.child = fork(script, [], { env: { ...process.env, SPLITFLEET_PEER: JSON.stringify(cfg) }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv: [] });
    live.add(this.child);
    this.child.once('exit', () => live.delete(this.child));
    this.child.stderr!.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString()).slice(-3000)));
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => ((readyResolve = res), (readyReject = rej)));
    this.child.once('exit', (code, signal) => readyReject(new Error(`${cfg.system} worker ${cfg.worker} exited (${code ?? signal}) before ready: ${this.stderr}`)));
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop() ?? '';
      for (const s of parts) {
        if (!s) continue;
        const l = JSON.parse(s) as PeerLine;
        if (l.ev === 'ready') readyResolve();
        onLine(l);
      }
    });
  }

  go(): void {
    this.child.send('go');
  }

  signal(sig: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(sig);
  }
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** SIGKILLs every worker still running (the bench is over, or failed). */
export async function killWorkers(): Promise<void> {
  await Promise.all([...live].map((c) => new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', () => resolve());
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  })));
}

async function prepare(system: SystemName, job: string, s: Scenario, ep: Endpoints): Promise<void> {
  if (system === 'splitfleet') return;
  const redis = new Redis(ep.redis, { maxRetriesPerRequest: null });
  try {
    await redis.flushall();
    const items = peerItems(s.items);
    if (system === 'redis-locks') {
      for (let i = 0; i < items.length; i += 1000) await redis.sadd(`${job}:todo`, ...items.slice(i, i + 1000).map((x) => x.id));
      return;
    }
    const url = new URL(ep.redis);
    const queue = new Queue(job, { connection: { host: url.hostname, port: Number(url.port) } });
    for (let i = 0; i < items.length; i += 1000) {
      await queue.addBulk(items.slice(i, i + 1000).map((x) => ({ name: 'item', data: { units: x.units }, opts: { jobId: x.id, removeOnComplete: true } })));
    }
    await queue.close();
  } finally {
    redis.disconnect();
  }
}

/** Whether the store itself says every item is done (the lines may miss a completion a SIGKILL cut off). */
async function storeDone(system: SystemName, job: string, ep: Endpoints, lines: readonly PeerLine[], redis: Redis): Promise<boolean> {
  if (system === 'splitfleet') return lines.some((l) => l.ev === 'finished');
  if (system === 'redis-locks') return (await redis.scard(`${job}:todo`)) === 0;
  const url = new URL(ep.redis);
  const queue = new Queue(job, { connection: { host: url.hostname, port: Number(url.port) } });
  try {
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
    return Object.values(counts).every((n) => n === 0);
  } finally {
    await queue.close();
  }
}

export interface ScenarioResult extends PeerFigures {
  workers: number;
  lanes: number;
  items: number;
  totalUnits: number;
  errors: string[];
}

export async function runScenario(system: SystemName, s: Scenario, ep: Endpoints, runId: string): Promise<ScenarioResult> {
  const job = `peers-${s.name}-${runId}`;
  await prepare(system, job, s, ep);
  const items = peerItems(s.items);
  const totalUnits = items.reduce((a, i) => a + i.units, 0);
  const lines: PeerLine[] = [];
  const processed = new Set<string>();
  // Parts (items, and the residuals of divisions) done, and those known but not done yet.
  const done = new Set<string>();
  const open = new Set(items.map((i) => i.id));
  const errors: string[] = [];
  let wake: () => void = () => undefined;
  const onLine = (l: PeerLine) => {
    lines.push(l);
    if (l.ev === 'unit') processed.add(`${l.id}#${l.u}`);
    else if (l.ev === 'done' && l.ok) {
      done.add(l.p ?? l.id!);
      open.delete(l.p ?? l.id!);
    } else if (l.ev === 'divided' && l.r !== undefined && !done.has(l.r)) open.add(l.r);
    else if (l.ev === 'error' && errors.length < 5) errors.push(`${l.w}: ${l.message}`);
    wake();
  };
  const config = (worker: string): PeerWorkerConfig => ({
    system, worker, lanes: s.lanes, items: s.items, unitMs: s.unitMs, commitEvery: s.commitEvery, leaseMs: s.leaseMs,
    endpoint: system === 'splitfleet' ? ep.etcd : ep.redis, job,
  });
  const initial = s.name === 'join' ? s.workers - 1 : s.workers;
  const procs = Array.from({ length: initial }, (_, i) => new PeerProcess(config(`w${i}`), onLine));
  const redis = new Redis(ep.redis, { maxRetriesPerRequest: null, lazyConnect: system === 'splitfleet' });
  let inStore = false;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      await new Promise((r) => setTimeout(r, 250));
      // Only once every unit ran: the store is asked about the end, not polled all run long.
      if (processed.size >= totalUnits && !inStore) inStore = await storeDone(system, job, ep, lines, redis).catch(() => false);
    }
  })();
  try {
    await Promise.all(procs.map((p) => p.ready));
    const t0 = Date.now();
    for (const p of procs) p.go();
    let fault: { worker: string; at: number } | undefined;
    let join: { worker: string; at: number } | undefined;
    let resumeAt = 0;
    const until = (pred: () => boolean) => new Promise<void>((resolve) => {
      const check = () => {
        if (pred() || Date.now() - t0 > s.capMs) {
          clearInterval(timer);
          wake = () => undefined;
          resolve();
        } else wake = check;
      };
      const timer = setInterval(check, 50);
      check();
    });
    const share = () => processed.size / totalUnits;
    if (s.at !== undefined) {
      await until(() => share() >= s.at!);
      if (s.name === 'kill') {
        fault = { worker: 'w0', at: Date.now() };
        procs[0]!.signal('SIGKILL');
      } else if (s.name === 'stall') {
        fault = { worker: 'w0', at: Date.now() };
        procs[0]!.signal('SIGSTOP');
        resumeAt = fault.at + s.stallMs!;
        setTimeout(() => procs[0]!.signal('SIGCONT'), s.stallMs!);
      } else if (s.name === 'join') {
        const joiner = new PeerProcess(config(`w${initial}`), onLine);
        procs.push(joiner);
        await joiner.ready;
        join = { worker: `w${initial}`, at: Date.now() };
        joiner.go();
      }
    }
    // A stalled worker's late writes land after it resumes: keep watching a moment past that.
    await until(() => (open.size === 0 || inStore) && (resumeAt === 0 || Date.now() > resumeAt + 1500));
    await new Promise((r) => setTimeout(r, 100)); // the last batched lines
    const lanes = s.workers * s.lanes;
    // SPLITFLEET_PEERS_LINES=DIR keeps every worker line of each run (DIR/<scenario>-<system>.jsonl), to see where lanes idle.
    if (process.env.SPLITFLEET_PEERS_LINES) writeFileSync(`${process.env.SPLITFLEET_PEERS_LINES}/${s.name}-${system}.jsonl`, `${JSON.stringify({ t0 })}\n${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const figures = measure(lines, { items, lanes, unitMs: s.unitMs, t0, storeDone: inStore, ...(fault ? { fault } : {}), ...(join ? { join } : {}), ...(s.bound ? { bound: s.bound } : {}) });
    return { ...figures, workers: s.workers, lanes, items: items.length, totalUnits, errors };
  } finally {
    polling = false;
    await poll;
    redis.disconnect();
    await killWorkers();
  }
}
