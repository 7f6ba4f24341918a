/**
 * The chaos auditor: the one history recorder (test/support/history.ts) on
 * its own EtcdStore, straight to etcd (never through a test proxy), watching
 * the job's keys from revision 1 and keeping every write in revision order,
 * plus a live picture (who holds which lease
 * key, which splits are terminal) that scenarios use to pick victims and to
 * know when the job is done. The checks themselves are pure: see checks.ts.
 *
 * The watch covers `<root>/<job>` without the trailing slash, so a sync
 * marker written at `<root>/<job>.audit-sync` (outside the job's prefix, so
 * no coordinator ever sees it) proves the recorder has caught up to a
 * revision: `sync()` writes it and waits for its event.
 */
import type { KeyKind } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { WatchEvent } from '../../src/store/store.js';
import { HistoryRecorder, type HistoryEvent } from '../support/history.js';
import { audit, type AuditOptions, type AuditReport, type Ledger } from './checks.js';

export type { AuditReport, Ledger } from './checks.js';
export type { HistoryEvent } from '../support/history.js';

export class Auditor {
  /** Live lease keys: split id → owner. */
  readonly leaseOwners = new Map<string, string>();
  /** Live split records: id → status. */
  readonly status = new Map<string, string>();
  /** Live split records, whole (for describing a stuck job). */
  readonly records = new Map<string, Record<string, any>>();
  /** Committed progress by split, from `progress.{id}` (split records no longer carry it). */
  readonly committed = new Map<string, unknown>();
  /** Live assignment records: instance → split ids. */
  readonly assigned = new Map<string, string[]>();
  /** Live presence keys. */
  readonly presence = new Set<string>();
  planned: number | undefined;
  leaderInstance: string | undefined;
  watchError: Error | undefined;
  private readonly store: EtcdStore;
  private readonly recorder: HistoryRecorder;

  private constructor(endpoints: string | string[], readonly root: string, readonly job: string) {
    this.store = new EtcdStore({ endpoints, opTimeoutMs: 3000, watchRetryMaxMs: 500 });
    this.recorder = new HistoryRecorder(this.store, `${root}/${job}`, this.prefix, {
      fromRevision: 1,
      onError: (e) => {
        this.watchError = e;
      },
    });
    this.recorder.follow((e) => this.track(e.kind, e.id, e.type, e.rec));
  }

  /** Starts recording from revision 1; resolves once the watch is established. */
  static async start(endpoints: string | string[], job: string, root = 'splitfleet'): Promise<Auditor> {
    const a = new Auditor(endpoints, root, job);
    await a.recorder.ready;
    return a;
  }

  /** Every write to the job's keys, in revision order. */
  get history(): readonly HistoryEvent[] {
    return this.recorder.events;
  }

  get lastRevision(): number {
    return this.recorder.lastRevision;
  }

  get prefix(): string {
    return `${this.root}/${this.job}/`;
  }

  /** Split ids whose record is completed. */
  get completed(): number {
    let n = 0;
    for (const s of this.status.values()) if (s === 'completed') n++;
    return n;
  }

  /** True once a final plan's every split record is terminal. */
  get jobTerminal(): boolean {
    if (this.planned === undefined || this.status.size < this.planned) return false;
    for (const s of this.status.values()) if (s === 'runnable') return false;
    return true;
  }

  /** Split ids whose lease key names `instance`. */
  heldBy(instance: string): string[] {
    return [...this.leaseOwners].filter(([, o]) => o === instance).map(([id]) => id).sort();
  }

  /**
   * Writes the sync marker and waits until the watch delivers it: every write
   * to the job before now has then been recorded. Retries while etcd is down.
   */
  async sync(timeoutMs = 30_000): Promise<void> {
    await this.recorder.sync(`${this.root}/${this.job}.audit-sync`, timeoutMs);
  }

  /** The job as the auditor sees it now: leader, members, and every split not yet terminal. */
  describeState(): string {
    const assignee = new Map<string, string>();
    for (const [instance, ids] of this.assigned) for (const id of ids) assignee.set(id, instance);
    const open = [...this.records].filter(([, r]) => r.status === 'runnable').map(([id, r]) =>
      `${id} epoch ${r.epoch} owner ${r.owner || '-'} progress ${JSON.stringify(this.committed.get(id) ?? null)} attempts ${r.attempts} lease ${this.leaseOwners.get(id) ?? '-'} assigned ${assignee.get(id) ?? '-'}`);
    return `revision ${this.lastRevision}; leader ${this.leaderInstance ?? '-'}; presence ${[...this.presence].sort().join(',') || '-'}; ` +
      `planned ${this.planned ?? '?'}, completed ${this.completed}; assignments ${JSON.stringify(Object.fromEntries(this.assigned))}\n  open splits:\n    ${open.join('\n    ') || '(none)'}`;
  }

  /**
   * The recorder's own check: the job's keys as etcd
   * lists them now must be exactly what the recorded history adds up to, key
   * by key and revision by revision. A difference means the watch lost or
   * invented an event, and every other check would be built on sand.
   */
  async missedEvents(): Promise<string[]> {
    const { kvs, revision } = await this.store.listAll(this.prefix);
    await this.sync(); // everything up to the listing's revision is recorded by now
    const last = new Map<string, HistoryEvent>();
    for (const e of this.history) if (e.rev <= revision) last.set(e.key, e);
    const problems: string[] = [];
    const listed = new Set<string>();
    for (const kv of kvs) {
      listed.add(kv.key);
      const e = last.get(kv.key);
      if (!e || e.type !== 'put' || e.rev !== kv.modRevision) {
        problems.push(`${kv.key} is at revision ${kv.modRevision} on etcd; the recorder's last event for it is ${e ? `a ${e.type} at ${e.rev}` : 'none'}`);
      }
    }
    for (const [key, e] of last) {
      if (e.type === 'put' && !listed.has(key)) problems.push(`${key} was put at ${e.rev} and is gone from etcd, but the recorder saw no delete`);
    }
    return problems;
  }

  /** Runs the checks over everything recorded (call `sync()` first). */
  audit(ledger: Ledger, options: AuditOptions): AuditReport {
    return audit(this.history, ledger, options);
  }

  async close(): Promise<void> {
    await this.recorder.close();
    await this.store.close();
  }

  private track(kind: KeyKind | 'unknown', id: string | undefined, type: 'put' | 'delete', rec: Record<string, any> | undefined): void {
    if (kind === 'lease' && id) {
      if (type === 'put' && rec) this.leaseOwners.set(id, String(rec.owner));
      else this.leaseOwners.delete(id);
    } else if (kind === 'split' && id && type === 'put' && rec) {
      this.status.set(id, String(rec.status));
      this.records.set(id, rec);
    } else if (kind === 'progress' && id && type === 'put' && rec) {
      this.committed.set(id, rec.progress);
    } else if (kind === 'assign' && id) {
      if (type === 'put' && rec) this.assigned.set(id, rec.splits as string[]);
      else this.assigned.delete(id);
    } else if (kind === 'worker' && id) {
      if (type === 'put') this.presence.add(id);
      else this.presence.delete(id);
    } else if (kind === 'plan' && type === 'put' && rec?.final) {
      this.planned = Number(rec.planned);
    } else if (kind === 'leader') {
      this.leaderInstance = type === 'put' ? rec?.instance : undefined;
    }
  }
}

/** `WatchEvent` re-exported for scenario code that feeds histories by hand. */
export type { WatchEvent };
