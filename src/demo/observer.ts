/**
 * The demo's observer: one prefix watch on the job, as any operator tool
 * could keep, turned into (a) the live JobReport the view draws, (b) a
 * narrative of what happens (joins, departures, elections, moves,
 * revocations, claims that resume someone else's progress, quarantines) and
 * (c) figures for the summary: leader changes, moves, and the worst
 * imbalance of any published assignment.
 *
 * It only reads. It decodes with the job's known fingerprint hash; a record
 * it cannot read is a problem line, never a crash.
 */
import { loadFigures } from '../engine.js';
import { defaultFingerprint, jobPrefix, type Store, type WatchEvent, type WatchHandle } from '../index.js';
import { applyRecord, emptyJobRecords, jobReport, type JobRecords, type JobReport } from '../inspect/report.js';
import { splitStatus, usesPages } from '../inspect/packed-records.js';
import { parseKey } from '../protocol/keys.js';
import { inJobScope, jobSpan } from '../protocol/scope.js';
import { fingerprintHash } from '../protocol/records.js';

export interface Narrative {
  /** Milliseconds since the demo started. */
  at: number;
  kind: 'join' | 'leave' | 'leader' | 'move' | 'revoke' | 'claim' | 'expire' | 'quarantine' | 'chaos' | 'drain' | 'note';
  text: string;
}

export class JobObserver {
  readonly records: JobRecords = emptyJobRecords();
  readonly prefix: string;
  readonly problems: string[] = [];
  revision = 0;
  /** Leader elections after the first. */
  leaderChanges = 0;
  /** Splits whose published assignee changed from one instance to another. */
  moves = 0;
  /** The largest max-load / lower-bound ratio of any published assignment seen. */
  maxImbalance = 1;
  private readonly fp: string;
  private handle: WatchHandle | undefined;
  private lastLeader: string | undefined;
  private readonly lastAssignee = new Map<string, string>();
  private readonly lastHolder = new Map<string, string>();
  private assignsDirty = false;
  private frozen = false;
  private readonly listeners: ((n: Narrative) => void)[] = [];

  constructor(
    private readonly store: Store,
    private readonly root: string,
    private readonly job: string,
    private readonly started: number,
  ) {
    this.prefix = jobPrefix(root, job);
    this.fp = fingerprintHash(defaultFingerprint(root, job));
  }

  /** Subscribes to the narrative. */
  onNarrative(listener: (n: Narrative) => void): void {
    this.listeners.push(listener);
  }

  /** Adds a line of the demo's own (chaos it caused, notes). */
  tell(kind: Narrative['kind'], text: string): void {
    const n: Narrative = { at: Date.now() - this.started, kind, text };
    for (const l of this.listeners) l(n);
  }

  async start(): Promise<void> {
    // The job's span only, and of it only the job's own keys: never a nested job's (decision 0027).
    this.handle = this.store.snapshotAndWatch(this.prefix, {
      onSnapshot: (kvs, revision) => {
        for (const kv of kvs) if (inJobScope(this.prefix, kv.key)) this.apply(kv.key, kv.value, false);
        this.revision = revision;
      },
      onEvent: (e) => {
        if (inJobScope(this.prefix, e.key)) this.onEvent(e);
      },
      onError: (e) => this.tell('note', `the observer's watch stopped: ${e.message}`),
    }, jobSpan(this.prefix));
    await this.handle.ready;
  }

  async close(): Promise<void> {
    await this.handle?.close();
  }

  /** Stops counting leader changes, moves and imbalance: the run has its verdict and the fleet is stopping. */
  freeze(): void {
    this.frozen = true;
  }

  /** Measures the published assignment if it changed (call on a timer: between events, never mid-batch). */
  sample(): void {
    if (this.assignsDirty) this.measureImbalance();
  }

  /** The report of the job as observed now. */
  report(): JobReport {
    this.sample();
    return jobReport(this.records, {
      root: this.root, job: this.job, prefix: this.prefix, revision: this.revision, fingerprintHash: this.fp, problems: this.problems,
    });
  }

  get leader(): string | undefined {
    return this.records.leader?.instance;
  }

  private apply(key: string, value: string | undefined, narrate: boolean): void {
    const problem = applyRecord(this.records, this.prefix, this.fp, key, value);
    if (problem !== undefined && !this.problems.includes(problem)) this.problems.push(problem);
    if (!narrate) {
      const leader = this.records.leader;
      if (leader) this.lastLeader = `${leader.instance}#${leader.generation}`;
      for (const [instance, rec] of this.records.assigns) for (const id of rec.splits) this.lastAssignee.set(id, instance);
      for (const [id, lease] of this.records.leases) this.lastHolder.set(id, lease.owner);
      this.assignsDirty = true;
    }
  }

  private onEvent(e: WatchEvent): void {
    this.revision = Math.max(this.revision, e.modRevision);
    const parsed = parseKey(this.prefix, e.key);
    if (parsed.kind === 'unknown') return;
    const id = 'id' in parsed ? parsed.id : '';
    const before = {
      worker: parsed.kind === 'worker' ? this.records.workers.get(id) : undefined,
      assign: parsed.kind === 'assign' ? this.records.assigns.get(id) : undefined,
      lease: parsed.kind === 'lease' ? this.records.leases.get(id) : undefined,
      split: parsed.kind === 'split' ? this.records.splits.get(id) : undefined,
    };
    this.apply(e.key, e.type === 'put' ? e.value : undefined, true);
    switch (parsed.kind) {
      case 'leader': {
        const l = this.records.leader;
        if (!l) break;
        const tag = `${l.instance}#${l.generation}`;
        if (tag === this.lastLeader) break;
        // An election after the job finished is the fleet stopping (the leader resigned first), not a change worth counting.
        const finished = this.finished() || this.frozen;
        if (this.lastLeader !== undefined && !finished) this.leaderChanges++;
        this.lastLeader = tag;
        this.tell('leader', `${l.instance} leads (generation ${l.generation})${finished ? ' while the fleet stops' : ''}`);
        break;
      }
      case 'worker': {
        const now = this.records.workers.get(id);
        if (now && !before.worker) this.tell('join', `${id} joined (${now.maxInFlight} lanes)`);
        if (!now && before.worker) this.tell('leave', this.finished() ? `${id} stopped: the job is finished` : `${id} left: its presence key is gone`);
        break;
      }
      case 'assign':
        this.assignsDirty = true;
        this.onAssign(id, before.assign?.splits ?? []);
        break;
      case 'lease':
        this.onLease(id, before.lease?.owner);
        break;
      case 'split': {
        const now = this.records.splits.get(id);
        if (now?.status === 'quarantined' && before.split?.status !== 'quarantined') {
          this.tell('quarantine', `${id} quarantined after ${now.attempts} attempts${now.reason ? `: ${now.reason}` : ''}`);
        }
        break;
      }
      default:
        break;
    }
  }

  /** A final plan whose every split is terminal (a packed job's: by its record, else by its page's folded bit). */
  private finished(): boolean {
    const r = this.records;
    if (!r.plan?.final) return false;
    const ids = usesPages(r) ? new Set([...r.queue.slots.keys(), ...r.splits.keys()]) : r.splits.keys();
    let n = 0;
    for (const id of ids) {
      if (splitStatus(r, id) === 'runnable') return false;
      n++;
    }
    return n >= r.plan.planned;
  }

  private onAssign(instance: string, previous: readonly string[]): void {
    const now = this.records.assigns.get(instance)?.splits ?? [];
    const had = new Set(previous);
    for (const id of now) {
      const was = this.lastAssignee.get(id);
      this.lastAssignee.set(id, instance);
      if (was !== undefined && was !== instance && !had.has(id)) {
        if (!this.frozen) this.moves++;
        const gone = this.records.workers.has(was) ? '' : ' (gone)';
        this.tell('move', `${id} moved ${was}${gone} → ${instance}`);
      }
    }
    // Revocations: splits this instance holds that its record stopped naming.
    const named = new Set(now);
    if (!this.records.assigns.has(instance)) return;
    for (const id of previous) {
      if (named.has(id)) continue;
      if (this.records.leases.get(id)?.owner === instance) this.tell('revoke', `revoking ${id} from ${instance} (cooperative drain)`);
    }
  }

  private onLease(id: string, previousOwner: string | undefined): void {
    const lease = this.records.leases.get(id);
    if (lease) {
      const was = this.lastHolder.get(id);
      this.lastHolder.set(id, lease.owner);
      if (was !== undefined && was !== lease.owner) {
        const units = (this.records.specs.get(id)?.descriptor as { units?: number } | null)?.units;
        const committed = this.records.progress.get(id)?.progress;
        const at = typeof committed === 'number' ? committed : 0;
        this.tell('claim', `${id} claimed by ${lease.owner} from ${was}, resuming at ${at}${units !== undefined ? `/${units}` : ''}`);
      }
      return;
    }
    // Deleted: released or completed by its owner (a fenced write), or expired with its owner's lease.
    const split = this.records.splits.get(id);
    if (previousOwner !== undefined && split?.status === 'runnable' && split.owner === previousOwner && !this.records.workers.has(previousOwner)) {
      const committed = this.records.progress.get(id)?.progress;
      this.tell('expire', `${id}: lease of ${previousOwner} expired; claimable at ${typeof committed === 'number' ? committed : 0}`);
    }
  }

  /** Imbalance of the published assignment over live members (max load / lower bound). */
  private measureImbalance(): void {
    this.assignsDirty = false;
    if (this.frozen) return;
    const loads: number[] = [];
    const weights: number[] = [];
    for (const [instance, rec] of this.records.assigns) {
      if (!this.records.workers.has(instance)) continue;
      let load = 0;
      for (const id of rec.splits) {
        const w = Math.max(1, this.records.specs.get(id)?.weight ?? 0);
        load += w;
        weights.push(w);
      }
      loads.push(load);
    }
    if (weights.length === 0) return;
    const figures = loadFigures(loads, weights);
    if (figures.imbalance > this.maxImbalance) this.maxImbalance = figures.imbalance;
  }
}
