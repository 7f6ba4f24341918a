/**
 * The hostile writer: someone with write access to etcd (an `etcdctl put`, a
 * buggy tool, a newer build) who overwrites a job's records with things this
 * build must survive, and later puts some of them back.
 *
 * It writes straight to the shared MemoryStore, never through a process's
 * facade, and tells the auditor which revisions are its own: the auditor
 * replays the fleet's history without them (as if the foreign value had never
 * been there), so every fence and ownership check still holds the fleet's own
 * writes to account. Repairs are compare-and-swaps on the hostile revision: a
 * record the fleet has rewritten since (a newer minor's record it read and
 * kept) is left alone.
 *
 * What it targets: records the fleet reads that carry no etcd lease (their
 * previous value can be put back exactly), and, for the leased kinds, only
 * keys that do not exist (a `worker`, `lease` or `assign` record for an
 * instance that is not there) or live ones written again with no etcd lease
 * (`leaseless`: no longer live, decision 0059; the auditor replays that
 * write, since what the fleet does next depends on it). `delete` removes a
 * record of the kinds the fleet must repair or report on its own (DELETABLE)
 * and puts it back later if it is still absent and that still makes sense
 * (below). `plan` gets only a newer minor's valid record:
 * an unreadable plan is a documented fatal (its own test, not a schedule's).
 * A packed job's queue pages and folded records (`queue.{bucket}.{page}`,
 * `folded.{bucket}.{page}`, PACKED_HOSTILE_KINDS) get every mutation that
 * applies; none makes a readable record that says something else (a page's
 * descriptors are free-form JSON, like a spec's), so the fleet must refuse
 * each or read what was there.
 *
 * What a deletion may cost (substrate.md, "Hostile records": what it names,
 * no more), which the auditor allows the splits it named from the deletion
 * on (lives.ts, test/support/packed-invariants.ts `external`):
 * - `assign.{instance}`, `control`, `summary`: written again by the leader
 *   (or the operator's record gone: the job runs as if never paused).
 * - `split.{id}`: created again (seeded, or promoted again from its page:
 *   epoch 0; not once the job has its verdict: put back then); the split runs
 *   again from its committed progress, and its old owner drops its lease key
 *   (decision 0071).
 * - `spec.{id}`: a keys split is parked until it is put back; a packed
 *   promotion puts its page's copy again.
 * - `progress.{id}`: the units it had committed run again (a rerun, never a
 *   lost split); a completed split's record stands, and a packed fold-back
 *   then keeps no result for it.
 * - `folded.{bucket}.{page}`: the leader in office writes back the bits it
 *   saw (decision 0061); a leader that never saw them runs those splits again.
 * - `queue.{bucket}.{page}`: its splits are parked while the leader in
 *   office promotes from it (decision 0061); a leader that lists the job
 *   without it seeds them into another page while the plan is open (they run
 *   again), or, the plan final, lists the pages again until it is put back
 *   (decision 0072).
 * The repair puts a deleted record back only if it is still absent, and not
 * a page every split of which a leader seeded into other pages since (two
 * pages would hold them; one that alone still holds some is put back), nor, in a packed job, a split's record once the split has none left (a
 * fold-back took them: it would name a split folded).
 *
 * Pure of the fleet: it needs the store, the prefix, a revision callback and
 * a seeded random source.
 */
import type { MemoryStore } from '../../src/store/memory.js';
import type { KeyValue } from '../../src/store/store.js';
import { parseKey } from '../../src/protocol/keys.js';

export type HostileKind = 'split' | 'spec' | 'progress' | 'assign' | 'worker' | 'lease' | 'control' | 'publish' | 'plan' | 'summary' | 'queue' | 'folded';

export type Mutation =
  /** Not JSON at all, or JSON of the wrong shape. */
  | 'garbage'
  /** An extra field nested 20,000 deep (about 40 KB): decodes as JSON, cannot be written back. */
  | 'deep'
  /** An extra field holding a 300 KB string. */
  | 'huge'
  /** Control characters and terminal escapes in a field the record has. */
  | 'control-chars'
  /** A known field with the wrong type. */
  | 'wrong-type'
  /** The same field twice in the text (JSON.parse keeps the last one silently). */
  | 'duplicate-key'
  /** A valid record of a newer minor: the same fields, plus ones this build does not know. */
  | 'newer-minor'
  /** A well-formed record for an instance that is not in the fleet. */
  | 'dead-instance'
  /** The record deleted (a hand `etcdctl del`, a restore that lacks it); put back later if still absent. */
  | 'delete'
  /** A live ephemeral key (`worker`, `lease`) written again, same value, with no etcd lease (a hand restore). */
  | 'leaseless';

/** The kinds every job has (a keys job's schedules draw from these). */
export const HOSTILE_KINDS: readonly HostileKind[] = ['split', 'spec', 'progress', 'assign', 'worker', 'lease', 'control', 'publish', 'plan', 'summary'];
/** A packed job's own kinds (decision 0037): its queue pages and their folded bitsets. */
export const PACKED_HOSTILE_KINDS: readonly HostileKind[] = ['queue', 'folded'];
export const MUTATIONS: readonly Mutation[] = ['garbage', 'deep', 'huge', 'control-chars', 'wrong-type', 'duplicate-key', 'newer-minor', 'dead-instance', 'delete', 'leaseless'];

/**
 * The kinds a `delete` applies to: records whose loss the fleet repairs or reports as the spec
 * says (substrate.md, "Hostile records"), each at the cost the file's header lists. The `plan` is
 * left out (a deleted plan is a deleted job: every process stops, its own test), and so are the
 * leased kinds (`worker`, `lease`: their loss is a departure or an expiry, the usual faults).
 */
const DELETABLE = new Set<HostileKind>(['assign', 'control', 'summary', 'split', 'spec', 'progress', 'queue', 'folded']);

/** The instance no process of the fleet is ever called. */
export const GHOST = 'ghost';

interface Written {
  key: string;
  revision: number;
  /** What was there before (undefined: the key did not exist). */
  previous: string | undefined;
  what: string;
  /** A deletion: put back (if still absent) rather than compared at `revision`. */
  deleted?: boolean;
}

/** Fields whose value is any JSON by the schema (a queue page's descriptors: an array of any JSON, one per split). */
const FREE_FORM = new Set(['progress', 'descriptor', 'cursor', 'descriptors']);

const DEEP = 20_000;
const HUGE = 300 * 1024;

/** The id a key names (undefined for a key of no keyed kind). */
const idOf = (prefix: string, key: string): string | undefined => {
  const k = parseKey(prefix, key);
  return 'id' in k ? k.id : undefined;
};

/** A random pick from a non-empty list. */
const pick = <T>(xs: readonly T[], r: () => number): T => xs[Math.floor(r() * xs.length) % xs.length]!;

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The split ids a queue page's text holds (none when it is not a page). */
function idsOf(text: string | undefined): string[] {
  const ids = text === undefined ? undefined : parseObject(text)?.ids;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}

/** Text of `rec` with `"field": <valueText>` appended as one more member. */
function withRawField(rec: Record<string, unknown>, field: string, valueText: string): string {
  const base = JSON.stringify(rec);
  return `${base.slice(0, -1)}${base.length > 2 ? ',' : ''}${JSON.stringify(field)}:${valueText}}`;
}

/** The mutated text for a record that exists (`current`), or undefined when the mutation does not apply. */
export function mutate(current: string, mutation: Mutation, r: () => number): string | undefined {
  const rec = parseObject(current);
  switch (mutation) {
    case 'garbage':
      return pick(['', 'not json', '{', '[]', 'null', '42', '"split"', '{"v":1}', '\u0000\u00ff\ufffd', '{"v":1,"fp":7}'], r);
    case 'deep':
      if (!rec) return undefined;
      return withRawField(rec, 'x-deep', `${'['.repeat(DEEP)}${']'.repeat(DEEP)}`);
    case 'huge':
      if (!rec) return undefined;
      return JSON.stringify({ ...rec, 'x-huge': 'y'.repeat(HUGE) });
    case 'control-chars': {
      if (!rec) return undefined;
      const fields = Object.keys(rec).filter((k) => typeof rec[k] === 'string' && k !== 'v' && k !== 'fp');
      const hostile = '\u001b]0;pwned\u0007\u001b[2K\r\nall splits completed\u0000';
      if (fields.length === 0) return JSON.stringify({ ...rec, 'x-escape': hostile });
      const f = pick(fields, r);
      return JSON.stringify({ ...rec, [f]: `${String(rec[f])}${hostile}` });
    }
    case 'wrong-type': {
      if (!rec) return undefined;
      // Free-form JSON fields (progress, descriptor, cursor) accept any value: a forgery there is a valid record.
      const fields = Object.keys(rec).filter((k) => k !== 'v' && !FREE_FORM.has(k));
      if (fields.length === 0) return undefined;
      const f = pick(fields, r);
      const wrong = typeof rec[f] === 'string' ? pick([7, null, [], {}, true], r)
        : typeof rec[f] === 'number' ? pick(['1', -1, 1.5, 2 ** 60, null, 'NaN'], r)
          : Array.isArray(rec[f]) ? pick([{}, 'a', 3, [7, null]], r)
            : pick(['x', 3, null], r);
      return JSON.stringify({ ...rec, [f]: wrong });
    }
    case 'duplicate-key': {
      if (!rec) return undefined;
      const fields = Object.keys(rec).filter((k) => k !== 'v' && !FREE_FORM.has(k));
      if (fields.length === 0) return undefined;
      const f = pick(fields, r);
      // The first copy is the real one; a reader that keeps the last sees the forgery.
      return withRawField(rec, f, JSON.stringify(typeof rec[f] === 'number' ? (rec[f] as number) + 1000 : 'forged'));
    }
    case 'newer-minor':
      if (!rec) return undefined;
      return JSON.stringify({ ...rec, minor: 7, 'x-newer': { note: 'a field of minor 7', n: [1, 2, 3] } });
    case 'dead-instance':
    case 'delete':
    case 'leaseless':
      return undefined;
  }
}

/** Records a hostile writer put into one store, and puts them back. */
export class HostileWriter {
  private readonly outstanding: Written[] = [];
  /** Everything it did, for failure reports. */
  readonly log: string[] = [];

  constructor(
    private readonly store: MemoryStore,
    private readonly prefix: string,
    /** Called with each revision the writer made (the auditor leaves them out of its replay). */
    private readonly onRevision: (revision: number) => void,
  ) {}

  /** Whether any hostile record was written. */
  get wrote(): boolean {
    return this.log.some((l) => l.startsWith('wrote '));
  }

  get pending(): number {
    return this.outstanding.length;
  }

  /**
   * Writes one hostile record of `kind` (the `target`-th existing key of that
   * kind, or a new one for `dead-instance`). Returns what it wrote, or
   * undefined when nothing applied (no such key yet, a mutation that does not
   * fit, a leased key).
   */
  async write(kind: HostileKind, mutation: Mutation, target: number, r: () => number): Promise<string | undefined> {
    const P = this.prefix;
    if (kind === 'plan' && mutation !== 'newer-minor') return undefined;
    if (mutation === 'dead-instance') return this.writeForGhost(kind, target, r);
    if (mutation === 'leaseless') return this.writeLeaseless(kind, target);
    if (mutation === 'delete') return this.delete(kind, target);
    // Leased kinds only ever get dead-instance records (an existing one's value cannot be put back under its lease).
    if (kind === 'worker' || kind === 'lease') return undefined;
    const single = kind === 'control' || kind === 'publish' || kind === 'plan' || kind === 'summary';
    let kv: KeyValue | undefined;
    if (single) kv = await this.store.get(`${P}${kind}`);
    else {
      const { kvs } = await this.store.listAll(`${P}${kind}.`);
      kv = kvs.length > 0 ? kvs[target % kvs.length] : undefined;
    }
    if (!kv || kv.lease !== undefined) return undefined;
    if (this.outstanding.some((w) => w.key === kv.key)) return undefined;
    const text = mutate(kv.value, mutation, r);
    if (text === undefined) return undefined;
    return this.put(kv.key, kv.modRevision, kv.value, text, `${mutation} ${kv.key.slice(P.length)}`);
  }

  /** The key of `kind` the `target`-th of its kind names (the single key of a single kind). */
  private async existing(kind: HostileKind, target: number): Promise<KeyValue | undefined> {
    const P = this.prefix;
    if (kind === 'control' || kind === 'publish' || kind === 'plan' || kind === 'summary') return this.store.get(`${P}${kind}`);
    const { kvs } = await this.store.listAll(`${P}${kind}.`);
    return kvs.length > 0 ? kvs[target % kvs.length] : undefined;
  }

  /**
   * Writes a live presence or lease key again, same value, with no etcd lease: it is not live any
   * more (decision 0059), and nobody can put its lease back. Repaired by deleting it, if nobody
   * (the member putting its presence back, a claim writing over it) has since.
   */
  private async writeLeaseless(kind: HostileKind, target: number): Promise<string | undefined> {
    if (kind !== 'worker' && kind !== 'lease') return undefined;
    const kv = await this.existing(kind, target);
    if (!kv || kv.lease === undefined || this.outstanding.some((w) => w.key === kv.key)) return undefined;
    const res = await this.store.compareAndSwap(kv.key, kv.modRevision, kv.value);
    if (!res.won) return undefined;
    return this.record({ key: kv.key, revision: res.revision, previous: undefined, what: `leaseless ${kv.key.slice(this.prefix.length)}` });
  }

  /** Deletes a record of a kind in DELETABLE; repaired by putting it back if it is still absent. */
  private async delete(kind: HostileKind, target: number): Promise<string | undefined> {
    if (!DELETABLE.has(kind)) return undefined;
    const kv = await this.existing(kind, target);
    if (!kv || kv.lease !== undefined || this.outstanding.some((w) => w.key === kv.key)) return undefined;
    const res = await this.store.deleteIf(kv.key, kv.modRevision);
    if (!res.won) return undefined;
    return this.record({ key: kv.key, revision: res.revision, previous: kv.value, what: `delete ${kv.key.slice(this.prefix.length)}`, deleted: true });
  }

  private async writeForGhost(kind: HostileKind, target: number, r: () => number): Promise<string | undefined> {
    const P = this.prefix;
    const fp = await this.fingerprintHash();
    if (fp === undefined) return undefined;
    let key: string;
    let value: string;
    switch (kind) {
      case 'worker':
        key = `${P}worker.${GHOST}`;
        value = JSON.stringify({ v: 1, fp, instance: GHOST, maxInFlight: 1 + Math.floor(r() * 4), nonce: 'ghost-nonce' });
        break;
      case 'assign': {
        const { kvs } = await this.store.listAll(`${P}split.`);
        const ids = kvs.map((k) => idOf(P, k.key)).filter((id): id is string => id !== undefined).sort().slice(0, 1 + (target % 3));
        key = `${P}assign.${GHOST}`;
        value = JSON.stringify({ v: 1, fp, instance: GHOST, generation: 1, splits: ids });
        break;
      }
      case 'lease': {
        // A runnable split nobody holds: the ghost's lease key blocks its claim until it is removed.
        const { kvs } = await this.store.listAll(`${P}split.`);
        const { kvs: leases } = await this.store.listAll(`${P}lease.`);
        const held = new Set(leases.map((k) => idOf(P, k.key)));
        const free = kvs.filter((k) => !held.has(idOf(P, k.key)) && parseObject(k.value)?.status === 'runnable');
        if (free.length === 0) return undefined;
        const id = idOf(P, free[target % free.length]!.key);
        if (id === undefined) return undefined;
        key = `${P}lease.${id}`;
        value = JSON.stringify({ v: 1, fp, id, owner: GHOST, nonce: 'ghost-nonce', epoch: 1 });
        break;
      }
      default:
        return undefined;
    }
    const existing = await this.store.get(key);
    if (existing) return undefined;
    return this.put(key, 0, undefined, value, `dead-instance ${key.slice(P.length)}`);
  }

  /** The job's fingerprint hash, as the plan record carries it (undefined before the plan exists). */
  private async fingerprintHash(): Promise<string | undefined> {
    const plan = await this.store.get(`${this.prefix}plan`);
    const rec = plan && parseObject(plan.value);
    return typeof rec?.fp === 'string' ? rec.fp : undefined;
  }

  private async put(key: string, modRevision: number, previous: string | undefined, text: string, what: string): Promise<string | undefined> {
    const res = modRevision === 0 ? await this.store.createIfAbsent(key, text) : await this.store.compareAndSwap(key, modRevision, text);
    if (!res.won) return undefined;
    return this.record({ key, revision: res.revision, previous, what });
  }

  private record(w: Written): string {
    this.onRevision(w.revision);
    this.outstanding.push(w);
    this.log.push(`wrote ${w.what} at rev ${w.revision}`);
    return w.what;
  }

  /** Puts back the oldest outstanding record (if it is still the hostile one). */
  async repairOne(): Promise<string | undefined> {
    const w = this.outstanding.shift();
    return w ? this.repair(w) : undefined;
  }

  /** Puts back every outstanding record. */
  async repairAll(): Promise<void> {
    while (this.outstanding.length > 0) await this.repairOne();
  }

  /**
   * Why a deleted record still absent is not put back, if it is not: a queue page all of whose splits a
   * leader seeded again in other pages (two pages would hold them), or a split's own record once its split has
   * no record left in a packed job (folded back meanwhile: a record put back would name a split folded). A keys
   * job folds nothing: its records are put back (a hunt found a split left with neither, its job waiting for good).
   */
  private async moot(w: Written): Promise<string | undefined> {
    const P = this.prefix;
    const k = parseKey(P, w.key);
    if (k.kind === 'queue') {
      // Moot only when other pages hold every one of its splits: a page seeded with some of them (and
      // new ones) may itself be deleted and left out as moot, and then this page is all that holds them.
      const ids = new Set(idsOf(w.previous));
      const { kvs } = await this.store.listAll(`${P}queue.`);
      const held = new Set(kvs.flatMap((kv) => idsOf(kv.value)));
      if (ids.size === 0 || ![...ids].every((id) => held.has(id))) return undefined;
      const other = kvs.find((kv) => idsOf(kv.value).some((id) => ids.has(id)));
      return `its splits were seeded again in ${other!.key.slice(P.length)}`;
    }
    if (k.kind !== 'split' && k.kind !== 'spec' && k.kind !== 'progress') return undefined;
    // Only a packed job folds splits back; a keys job's split with neither record is the writer's to put back.
    const plan = await this.store.get(`${P}plan`);
    if (plan === undefined || parseObject(plan.value)?.layout !== 'packed') return undefined;
    const sibling = k.kind === 'split' ? 'spec' : 'split';
    return (await this.store.get(`${P}${sibling}.${w.key.slice(P.length + k.kind.length + 1)}`)) ? undefined : `${sibling}.${k.id} is gone too (folded back)`;
  }

  private async repair(w: Written): Promise<string> {
    const kv = await this.store.get(w.key);
    if (w.deleted) {
      // Put back only if still absent: the fleet may have written the key again since (a new assignment record).
      if (kv) {
        this.log.push(`left ${w.what}: written again since (rev ${kv.modRevision})`);
        return `left ${w.what}`;
      }
      const moot = await this.moot(w);
      if (moot !== undefined) {
        this.log.push(`left ${w.what}: ${moot}`);
        return `left ${w.what}`;
      }
      const res = await this.store.createIfAbsent(w.key, w.previous!);
      if (res.won) this.onRevision(res.revision);
      this.log.push(`${res.won ? 'repaired' : 'could not repair'} ${w.what}${res.won ? ` at rev ${res.revision}` : ''}`);
      return `repaired ${w.what}`;
    }
    if (!kv || kv.modRevision !== w.revision) {
      this.log.push(`left ${w.what}: rewritten since (${kv ? `rev ${kv.modRevision}` : 'deleted'})`);
      return `left ${w.what}`;
    }
    const res = w.previous === undefined ? await this.store.deleteIf(w.key, w.revision) : await this.store.compareAndSwap(w.key, w.revision, w.previous);
    if (res.won) this.onRevision(res.revision);
    this.log.push(`${res.won ? "repaired" : "could not repair"} ${w.what}${res.won ? ` at rev ${res.revision}` : ''}`);
    return `repaired ${w.what}`;
  }
}
