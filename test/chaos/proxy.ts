/**
 * A loopback TCP proxy (node:net) between fleet members and etcd, with the
 * faults a network hands a client: every connection cut at once (a reset),
 * added one-way latency, and a partition (bytes held back, then delivered on
 * heal as TCP retransmission would, or dropped with a reset), and a silent
 * blackhole (bytes vanish, connections stay open with no reset: a load
 * balancer that forgot them, a half-open link).
 *
 * Invariants: bytes of one connection and direction are delivered in order,
 * whatever the latency does in between (one queue per direction, released by
 * due time, never reordered); while partitioned nothing reaches either side;
 * `close()` destroys every connection and stops listening. Framework-free.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface ProxyStats {
  /** Connections accepted so far. */
  accepted: number;
  /** Connections open now. */
  open: number;
  /** Connections destroyed by `cut()` or a dropping heal. */
  cut: number;
  bytes: number;
}

interface Pipe {
  client: Socket;
  upstream: Socket;
  pumps: Pump[];
  /** Blackholed: every byte is discarded, in both directions, for good. */
  dead: boolean;
}

/** One direction of one connection: chunks released in order at their due time. */
class Pump {
  /** `data` undefined marks the sender's FIN: end the other side once everything before it is out. */
  private queue: { at: number; data: Buffer | undefined }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly to: Socket, private readonly proxy: TcpProxy) {}

  push(data: Buffer | undefined): void {
    const last = this.queue[this.queue.length - 1]?.at ?? 0;
    this.queue.push({ at: Math.max(Date.now() + this.proxy.latencyMs, last), data });
    this.kick();
  }

  kick(): void {
    if (this.timer || this.proxy.partitioned) return;
    const head = this.queue[0];
    if (!head) return;
    const wait = head.at - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.kick();
      }, wait);
      return;
    }
    while (this.queue.length > 0 && this.queue[0]!.at <= Date.now() && !this.proxy.partitioned) {
      const { data } = this.queue.shift()!;
      if (this.to.destroyed) continue;
      if (data === undefined) this.to.end();
      else this.to.write(data);
    }
    if (this.queue.length > 0) this.kick();
  }

  drop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
  }
}

/** A running proxy: `url` is what clients use instead of etcd's own client URL. */
export class TcpProxy {
  latencyMs = 0;
  partitioned = false;
  /** While true, every connection (open or new) discards its bytes; see `blackhole`. */
  blackholed = false;
  readonly stats: ProxyStats = { accepted: 0, open: 0, cut: 0, bytes: 0 };
  private readonly pipes = new Set<Pipe>();
  private server: Server | undefined;
  private port = 0;

  private constructor(private readonly targetHost: string, private readonly targetPort: number) {}

  /** Listens on a free loopback port, forwarding to `target` (e.g. `http://127.0.0.1:2379`). */
  static async start(target: string): Promise<TcpProxy> {
    const u = new URL(target);
    const proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.listen();
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Resets every open connection (both sides see the connection drop); new ones are accepted as usual. */
  cut(): number {
    const n = this.pipes.size;
    for (const p of [...this.pipes]) this.destroy(p, true);
    return n;
  }

  /** Adds `ms` of delay to every chunk, both directions (0 removes it; order is kept either way). */
  setLatency(ms: number): void {
    this.latencyMs = Math.max(0, ms);
  }

  /**
   * Stops forwarding in both directions without closing anything: every byte
   * of every open connection, and of any connection accepted meanwhile, is
   * discarded, and no side sees a reset or a FIN. Only keepalive (or a
   * deadline) tells a client. `healBlackhole` lets new connections through;
   * the blackholed ones stay dead, as a forgotten flow does.
   */
  blackhole(): void {
    this.blackholed = true;
    for (const p of this.pipes) {
      p.dead = true;
      for (const pump of p.pumps) pump.drop();
    }
  }

  /** New connections forward again; the ones blackholed stay dead until their owners drop them. */
  healBlackhole(): void {
    this.blackholed = false;
  }

  /** Holds every byte back (connections stay open and new ones are accepted, but nothing gets through). */
  partition(): void {
    this.partitioned = true;
  }

  /**
   * Ends a partition. 'deliver' releases the held bytes in order (late
   * delivery of requests their senders may have given up on); 'reset' drops
   * them and resets every connection.
   */
  heal(mode: 'deliver' | 'reset' = 'deliver'): void {
    this.partitioned = false;
    if (mode === 'reset') {
      for (const p of [...this.pipes]) {
        for (const pump of p.pumps) pump.drop();
        this.destroy(p, true);
      }
      return;
    }
    for (const p of this.pipes) for (const pump of p.pumps) pump.kick();
  }

  async close(): Promise<void> {
    for (const p of [...this.pipes]) this.destroy(p, false);
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private listen(): Promise<void> {
    const server = createServer({ allowHalfOpen: true }, (client) => this.accept(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const a = server.address();
        this.port = typeof a === 'object' && a ? a.port : 0;
        resolve();
      });
    });
  }

  private accept(client: Socket): void {
    this.stats.accepted++;
    client.setNoDelay(true);
    const upstream = connect({ host: this.targetHost, port: this.targetPort, allowHalfOpen: true });
    upstream.setNoDelay(true);
    const pipe: Pipe = { client, upstream, pumps: [], dead: this.blackholed };
    const toUpstream = new Pump(upstream, this);
    const toClient = new Pump(client, this);
    pipe.pumps.push(toUpstream, toClient);
    this.pipes.add(pipe);
    this.stats.open = this.pipes.size;
    client.on('data', (d: Buffer) => {
      if (pipe.dead) return;
      this.stats.bytes += d.length;
      toUpstream.push(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (pipe.dead) return;
      this.stats.bytes += d.length;
      toClient.push(d);
    });
    client.on('end', () => pipe.dead || toUpstream.push(undefined));
    upstream.on('end', () => pipe.dead || toClient.push(undefined));
    const end = () => this.destroy(pipe, false);
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  }

  private destroy(pipe: Pipe, counted: boolean): void {
    if (!this.pipes.delete(pipe)) return;
    if (counted) this.stats.cut++;
    this.stats.open = this.pipes.size;
    for (const pump of pipe.pumps) pump.drop();
    // resetAndDestroy sends an RST, as a dropped connection does.
    const reset = (s: Socket) => {
      try {
        s.resetAndDestroy();
      } catch {
        s.destroy();
      }
    };
    reset(pipe.client);
    reset(pipe.upstream);
  }
}
