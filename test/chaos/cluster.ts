/**
 * A 3-member etcd cluster on loopback for the chaos suite: each member with
 * its own data dir, client and peer ports; one member can be killed
 * (SIGKILL by default) and restarted on its own data dir, and the raft
 * leader can be found (through etcd's JSON gateway, so this file needs no
 * etcd client library). With a `PeerIsolation` (faults.ts) the last member
 * runs in a network namespace whose peer link a scenario can cut.
 *
 * Invariants: `start()` resolves only once every member answers a
 * linearizable read (so the cluster has a leader); `restart(i)` resolves once
 * member i answers again; `stop()` kills every member and deletes every data
 * dir; members are SIGKILLed when the test process exits. A missing etcd
 * binary is a loud failure. The binary, ports, spawn and readiness probe are
 * the one launcher's (test/support/etcd.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnEtcd, waitForEtcd } from '../support/etcd.js';
import type { PeerIsolation } from './faults.js';

export interface ClusterMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  child: ChildProcess | undefined;
  /** The last 4 000 characters of its current run's stderr. */
  log: () => string;
  /** Runs in a network namespace whose peer link can be cut (faults.ts). */
  isolation?: PeerIsolation;
}

export interface ClusterOptions {
  /**
   * The last member runs in this namespace, on its addresses; the others listen for peers on
   * its host-side peer address (so the member can reach them) and for clients on loopback.
   */
  isolation?: PeerIsolation;
  /** Members start with `--pre-vote` (etcd 3.4's opt-in, 3.5's default; docs/operations.md recommends it). */
  preVote?: boolean;
}

export class EtcdCluster {
  private constructor(readonly members: ClusterMember[], private readonly initialCluster: string, private readonly token: string, private readonly preVote: boolean) {}

  /**
   * Starts `size` members (default 3) and waits for every one of them to serve reads. A port
   * found free can be taken (by another process's outgoing connection) before etcd binds it:
   * that start is retried on fresh ports.
   */
  static async start(size = 3, options: ClusterOptions = {}): Promise<EtcdCluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await EtcdCluster.startOnce(size, options);
      } catch (e) {
        if (attempt >= 3 || !String((e as Error)?.message).includes('address already in use')) throw e;
      }
    }
  }

  private static async startOnce(size: number, options: ClusterOptions): Promise<EtcdCluster> {
    const members: ClusterMember[] = [];
    const iso = options.isolation;
    for (let i = 0; i < size; i++) {
      const [c, p] = [await freePort(), await freePort()];
      const isolated = iso !== undefined && i === size - 1;
      members.push({
        name: `m${i}`,
        clientUrl: `http://${isolated ? iso.clientAddress : '127.0.0.1'}:${c}`,
        peerUrl: `http://${isolated ? iso.peerAddress : iso ? iso.hostPeerAddress : '127.0.0.1'}:${p}`,
        dataDir: mkdtempSync(join(tmpdir(), `splitfleet-chaos-m${i}-`)),
        child: undefined,
        log: () => '',
        ...(isolated ? { isolation: iso } : {}),
      });
    }
    const initial = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    const cluster = new EtcdCluster(members, initial, `chaos-${process.pid}-${Date.now()}`, options.preVote === true);
    try {
      for (let i = 0; i < size; i++) cluster.launch(i);
      await Promise.all(members.map((_, i) => cluster.ready(i)));
    } catch (e) {
      await cluster.stop();
      throw e;
    }
    return cluster;
  }

  /** Every member's client URL (what a client is given). */
  get endpoints(): string[] {
    return this.members.map((m) => m.clientUrl);
  }

  /** The client URLs of the members that cannot be isolated (the auditor's and the operator's, so they never go blind). */
  get stableEndpoints(): string[] {
    return this.members.filter((m) => !m.isolation).map((m) => m.clientUrl);
  }

  /** The pid of member i's etcd process (undefined when it is not running). */
  pid(i: number): number | undefined {
    return this.isRunning(i) ? this.members[i]!.child!.pid : undefined;
  }

  isRunning(i: number): boolean {
    const c = this.members[i]!.child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  /** Sends `signal` to member i and waits for it to exit; its data dir stays. */
  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.members[i]!;
    const child = m.child;
    m.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await gone;
  }

  /** Starts member i again on its data dir and ports; resolves once it serves reads. */
  async restart(i: number): Promise<void> {
    await this.kill(i);
    this.launch(i);
    await this.ready(i);
  }

  /** The index of the raft leader, as the running members report it; undefined when none knows one. */
  async leaderIndex(): Promise<number | undefined> {
    const ids = new Map<string, number>();
    let leader: string | undefined;
    for (let i = 0; i < this.members.length; i++) {
      if (!this.isRunning(i)) continue;
      try {
        const res = await fetch(`${this.members[i]!.clientUrl}/v3/maintenance/status`, {
          method: 'POST', body: '{}', signal: AbortSignal.timeout(1000),
        });
        const body = (await res.json()) as { header?: { member_id?: string }; leader?: string };
        if (body.header?.member_id) ids.set(body.header.member_id, i);
        if (body.leader && body.leader !== '0') leader = body.leader;
      } catch {
        // that member does not answer now
      }
    }
    return leader === undefined ? undefined : ids.get(leader);
  }

  /**
   * Asks the raft leader to hand leadership to member i (etcd's MoveLeader, through the JSON
   * gateway); true once member i reports itself leader (within 5 s).
   */
  async moveLeader(i: number): Promise<boolean> {
    const status = async (j: number) => {
      const res = await fetch(`${this.members[j]!.clientUrl}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) });
      return (await res.json()) as { header?: { member_id?: string }; leader?: string };
    };
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      try {
        const target = (await status(i)).header?.member_id;
        const leader = await this.leaderIndex();
        if (leader === i) return true;
        if (target && leader !== undefined) {
          await fetch(`${this.members[leader]!.clientUrl}/v3/maintenance/transfer-leadership`, {
            method: 'POST', body: JSON.stringify({ targetID: target }), signal: AbortSignal.timeout(3000),
          });
        }
      } catch {
        // no leader yet, or the transfer timed out: ask again
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    return (await this.leaderIndex()) === i;
  }

  /** Kills every member and deletes every data dir. */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((_, i) => this.kill(i)));
    for (const m of this.members) rmSync(m.dataDir, { recursive: true, force: true });
  }

  private launch(i: number): void {
    const m = this.members[i]!;
    const args = [
      '--name', m.name,
      '--data-dir', m.dataDir,
      '--listen-client-urls', m.clientUrl,
      '--advertise-client-urls', m.clientUrl,
      '--listen-peer-urls', m.peerUrl,
      '--initial-advertise-peer-urls', m.peerUrl,
      '--initial-cluster', this.initialCluster,
      '--initial-cluster-state', 'new',
      '--initial-cluster-token', this.token,
      '--logger', 'zap',
      '--log-level', 'error',
      ...(this.preVote ? ['--pre-vote'] : []),
    ];
    const proc = spawnEtcd(args, m.isolation?.wrap ?? []);
    m.child = proc.child;
    m.log = proc.log;
  }

  private ready(i: number): Promise<void> {
    const m = this.members[i]!;
    const child = m.child!;
    return waitForEtcd(m.clientUrl, 30_000, () =>
      child.exitCode !== null || child.signalCode !== null
        ? `etcd member ${m.name} exited during start-up (code ${child.exitCode}, signal ${child.signalCode}):\n${m.log()}`
        : undefined,
    );
  }
}
