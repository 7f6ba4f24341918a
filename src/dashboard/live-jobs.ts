/**
 * The jobs the dashboard follows live: one LiveJob (one prefix watch,
 * inspect/live.ts) per job someone has open, shared by every viewer of it,
 * made on the first request and closed `idleMs` after its last viewer left.
 * The job named when the dashboard was made (`--job`) is pinned: started
 * first, never closed before the dashboard.
 *
 * Invariants:
 * - At most `maxOpen` jobs are followed at once: each holds a watch and the
 *   decoded records of its job. To open one more an idle one is closed; when
 *   none is idle the request is refused (`OpenRefused`), never queued.
 * - Each job's view is serialised once per refresh (`ViewJson`), whatever
 *   the number of streams and requests it goes to (decision 0051).
 */
import { LiveJob, type LiveJobOptions } from '../inspect/live.js';
import type { DashboardView } from '../inspect/dashboard-view.js';

/** Default number of jobs followed at once. */
export const DEFAULT_MAX_OPEN_JOBS = 16;
/** Default time a job nobody views stays followed, so a reload or the next viewer finds it warm, ms. */
export const DEFAULT_IDLE_MS = 30_000;

/**
 * The latest view's JSON, as text (for the streams) and as bytes (for `api/state`), made once per
 * view and shared by every response. A view is a new object at each refresh (live.ts), and only
 * then, so the view itself is the key: no change counter is needed.
 */
export class ViewJson {
  private view: DashboardView | undefined;
  private data = '';
  private bytes: Uint8Array<ArrayBuffer> | undefined;

  text(view: DashboardView): string {
    if (this.view !== view) {
      this.view = view;
      this.data = JSON.stringify(view);
      this.bytes = undefined;
    }
    return this.data;
  }

  body(view: DashboardView): Uint8Array<ArrayBuffer> {
    const text = this.text(view);
    this.bytes ??= new TextEncoder().encode(text);
    return this.bytes;
  }
}

/** A job held open for one viewer: release it when done. */
export interface OpenJob {
  live: LiveJob;
  json: ViewJson;
  release(): void;
}

/** Refused: `maxOpen` jobs are followed and each has a viewer. */
export class OpenRefused extends Error {}

interface Entry {
  live: LiveJob;
  json: ViewJson;
  ready: Promise<void>;
  users: number;
  pinned: boolean;
  idle: NodeJS.Timeout | undefined;
}

export class LiveJobs {
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  constructor(
    private readonly base: Omit<LiveJobOptions, 'job'>,
    private readonly maxOpen = DEFAULT_MAX_OPEN_JOBS,
    private readonly idleMs = DEFAULT_IDLE_MS,
  ) {}

  /** Follows `job` for as long as the dashboard runs; rejects when its first read fails. */
  async pin(job: string): Promise<LiveJob> {
    const entry = this.entry(job);
    entry.pinned = true;
    await entry.ready;
    return entry.live;
  }

  /** The job, followed (opened if need be; its first read done): the caller must `release()` it. */
  async open(job: string): Promise<OpenJob> {
    const entry = this.entry(job);
    entry.users++;
    clearTimeout(entry.idle);
    entry.idle = undefined;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users === 0 && !entry.pinned && !this.closed) entry.idle = setTimeout(() => this.drop(job, entry), this.idleMs);
    };
    try {
      await entry.ready;
    } catch (e) {
      release();
      throw e;
    }
    return { live: entry.live, json: entry.json, release };
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) clearTimeout(e.idle);
    await Promise.all(all.map((e) => e.live.close()));
  }

  private entry(job: string): Entry {
    const had = this.entries.get(job);
    if (had !== undefined) return had;
    if (this.entries.size >= this.maxOpen) this.evictIdle(job);
    const live = new LiveJob({ ...this.base, job });
    const entry: Entry = { live, json: new ViewJson(), ready: live.start(), users: 0, pinned: false, idle: undefined };
    // A job whose first read failed is not kept: the next request tries again.
    entry.ready.catch(() => this.drop(job, entry));
    this.entries.set(job, entry);
    return entry;
  }

  /** Closes a job nobody views (the first opened of them) to make room, or refuses when every followed job has a viewer. */
  private evictIdle(wanted: string): void {
    for (const [job, e] of this.entries) {
      if (e.users === 0 && !e.pinned) {
        this.drop(job, e);
        return;
      }
    }
    throw new OpenRefused(`refused: ${this.maxOpen} jobs are followed already, each with a viewer (the dashboard's maxOpenJobs); close one to open ${wanted}`);
  }

  private drop(job: string, entry: Entry): void {
    clearTimeout(entry.idle);
    if (this.entries.get(job) === entry) this.entries.delete(job);
    void entry.live.close();
  }
}
