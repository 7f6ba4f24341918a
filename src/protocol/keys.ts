/**
 * The key layout of one job: every key lives under `<root>/<job>/`, and this
 * module is the only place that spells a key out (the table below and
 * `docs/keys.md` are the same table).
 *
 * Invariants:
 * - Every key is `<jobPrefix><kind>` (singletons) or `<jobPrefix><kind>.<id>`.
 *   Kinds contain no '.', so the first '.' after the prefix always ends the kind
 *   and an id may itself contain dots.
 * - An id is any well-formed Unicode string of 1 to 1,024 UTF-8 bytes (an
 *   object-store key is an id as it is). In a key it is encoded (`encodeId`):
 *   '%', '/' and control characters become %XX of their UTF-8 bytes, so an
 *   encoded id never contains '/' and no key of one job is mistaken for a key
 *   of a nested prefix (`<root>/<job>/x/...` parses as `unknown`). Ids without
 *   those characters are their own encoding.
 * - `parseKey` is total and canonical: anything that is not exactly a key of
 *   this layout, with an id in its one encoding, is `{ kind: 'unknown' }`,
 *   never an exception. It returns the raw (decoded) id.
 *
 * Pure: no I/O. Builders throw SplitfleetError('INVALID_INPUT') on a bad id,
 * because a bad id is a caller's bug, never a store condition.
 */

import { SplitfleetError } from '../errors.js';

/** Every kind of key in a job's prefix. */
export type KeyKind =
  | 'plan' | 'leader' | 'control' | 'publish' | 'summary' | 'worker' | 'spec' | 'split' | 'progress' | 'lease' | 'assign' | 'divide' | 'queue' | 'folded' | 'result';

/**
 * Which kind of id, if any, follows the kind in a key: a page is `{bucket}.{page}` (the packed
 * queue, decision 0037), a fold is `{generation}.{seq}` (a fold-back's results, decision 0069).
 */
export type KeyIdKind = 'none' | 'instance' | 'split' | 'page' | 'fold';

export interface KeyLayoutRow {
  readonly kind: KeyKind;
  /** The key under the job prefix, with `{instance}` / `{id}` placeholders. */
  readonly pattern: string;
  readonly idKind: KeyIdKind;
  /** 'durable' records outlive every process; 'ephemeral' ones are attached to an etcd lease. */
  readonly lifetime: 'durable' | 'ephemeral';
  readonly writtenBy: string;
  readonly holds: string;
}

/** The key table (mirrored in docs/keys.md; substrate.md is normative). */
export const KEY_LAYOUT: readonly KeyLayoutRow[] = [
  { kind: 'plan', pattern: 'plan', idKind: 'none', lifetime: 'durable', writtenBy: 'leader (CAS)',
    holds: 'schema, fingerprint, leader generation, finality, planned count, planner cursor' },
  { kind: 'leader', pattern: 'leader', idKind: 'none', lifetime: 'ephemeral', writtenBy: 'candidates (create-if-absent)',
    holds: 'instance, generation' },
  { kind: 'publish', pattern: 'publish', idKind: 'none', lifetime: 'durable', writtenBy: 'leader (in every assignment write)',
    holds: 'the generation of the last publishing write: its revision orders the leader\'s assignment writes' },
  { kind: 'control', pattern: 'control', idKind: 'none', lifetime: 'durable', writtenBy: 'operators (CAS: pause, resume, evacuate)',
    holds: 'paused, the evacuated instances (each with the run nonce it was evacuated under)' },
  { kind: 'summary', pattern: 'summary', idKind: 'none', lifetime: 'durable', writtenBy: 'leader (guarded by leadership, throttled); deleted by a retry',
    holds: 'the generation that wrote it, when; splits and weights by state, members and lanes, revocations in flight (decision 0040)' },
  { kind: 'worker', pattern: 'worker.{instance}', idKind: 'instance', lifetime: 'ephemeral', writtenBy: 'the worker',
    holds: 'lane budget, schema, per-run nonce' },
  { kind: 'spec', pattern: 'spec.{id}', idKind: 'split', lifetime: 'durable', writtenBy: 'leader (create-if-absent)',
    holds: 'weight, descriptor, plan generation' },
  { kind: 'split', pattern: 'split.{id}', idKind: 'split', lifetime: 'durable', writtenBy: 'claims, commits, releases (CAS)',
    holds: 'epoch, status, owner, attempts (the fence)' },
  { kind: 'progress', pattern: 'progress.{id}', idKind: 'split', lifetime: 'durable', writtenBy: 'the owner (in the fenced transaction)',
    holds: 'committed progress, the epoch that wrote it' },
  { kind: 'lease', pattern: 'lease.{id}', idKind: 'split', lifetime: 'ephemeral', writtenBy: 'the owner',
    holds: 'owner, nonce, epoch' },
  { kind: 'assign', pattern: 'assign.{instance}', idKind: 'instance', lifetime: 'durable', writtenBy: 'leader (guarded by leadership)',
    holds: 'the splits that instance should hold, the generation that wrote it' },
  { kind: 'divide', pattern: 'divide.{instance}', idKind: 'instance', lifetime: 'durable', writtenBy: 'leader (guarded by leadership)',
    holds: 'the divisions the leader asks of that instance\'s running splits (decision 0063)' },
  { kind: 'queue', pattern: 'queue.{bucket}.{page}', idKind: 'page', lifetime: 'durable', writtenBy: 'leader (create-if-absent, guarded; packed jobs only)',
    holds: 'up to 1,024 splits of one bucket, immutable: ids, weights, descriptors, plan generation' },
  { kind: 'folded', pattern: 'folded.{bucket}.{page}', idKind: 'page', lifetime: 'durable', writtenBy: 'leader (CAS, guarded; packed jobs only)',
    holds: 'the splits of that queue page folded back as completed (a bitset)' },
  { kind: 'result', pattern: 'result.{generation}.{seq}', idKind: 'fold', lifetime: 'durable', writtenBy: 'leader (create-if-absent, in a fold-back; packed jobs only)',
    holds: 'the final committed progress of the splits one fold-back folded (decision 0069), immutable' },
];

const ID_KIND: ReadonlyMap<string, KeyIdKind> = new Map(KEY_LAYOUT.map((r) => [r.kind, r.idKind]));

/** Largest id, in UTF-8 bytes: S3's key limit, so any object key is an id. An encoded id is at most 3× that. */
export const MAX_ID_BYTES = 1024;

/** UTF-8 length of a well-formed string, without allocating. */
export function utf8ByteLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n += 4; i++; } else n += 3;
    } else n += 3;
  }
  return n;
}

// A lone surrogate has no UTF-8 encoding: etcd would receive U+FFFD, and two
// different ids could then name the same key. `isWellFormed` (ES2024, Node 20
// and later) finds one: 17 µs for a queue page's 1,024 ids against 29 µs for
// the regex it replaced.
const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * The rule an id breaks, or undefined when it is valid. Split ids and instance
 * ids share one rule: a well-formed Unicode string (no lone surrogates) of 1 to
 * {@link MAX_ID_BYTES} UTF-8 bytes. Anything else goes: '/', '%', spaces and
 * control characters are encoded in keys (`encodeId`).
 */
export function idProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return `must be a string (got ${typeof id})`;
  if (id.length === 0) return 'must not be empty';
  const bytes = utf8ByteLength(id);
  if (bytes > MAX_ID_BYTES) return `must be at most ${MAX_ID_BYTES} UTF-8 bytes (got ${bytes})`;
  if (!isWellFormed(id)) return 'must be well-formed Unicode (no lone surrogates)';
  return undefined;
}

/** True when `id` is a valid split id / instance id (see {@link idProblem}). */
export function isValidId(id: unknown): id is string {
  return idProblem(id) === undefined;
}

// What an id's key form escapes: the escape itself, the segment separator, and
// control characters (\p{Cc}: C0, DEL, C1), which tools would print raw.
const ESCAPED = /[%/\p{Cc}]/gu;
const HAS_ESCAPE = /%/;

/**
 * An id as it appears in a key: '%', '/' and control characters as %XX of
 * their UTF-8 bytes (uppercase hex), everything else as it is. Reversible
 * (`decodeId`), and the identity on ids without those characters, so their
 * keys are what they were before ids could hold them.
 */
export function encodeId(id: string): string {
  return id.replace(ESCAPED, encodeURIComponent);
}

/**
 * The id a key's id part encodes, or undefined when it is not the one
 * encoding of a valid id (a raw '/' or control character, lowercase or
 * superfluous escapes, escaped bytes that are not UTF-8, an invalid id).
 */
export function decodeId(encoded: string): string | undefined {
  let id = encoded;
  if (HAS_ESCAPE.test(encoded)) {
    try {
      id = decodeURIComponent(encoded);
    } catch {
      return undefined; // a stray '%' or bytes that are not UTF-8 (lone surrogates included)
    }
  }
  if (encodeId(id) !== encoded) return undefined;
  return isValidId(id) ? id : undefined;
}

function checkId(what: 'split id' | 'instance id', id: string): string {
  const problem = idProblem(id);
  if (problem !== undefined) {
    throw new SplitfleetError('INVALID_INPUT', `${what} ${JSON.stringify(id)}: ${problem}`);
  }
  return id;
}

/**
 * The prefix every key of a job lives under: `<root>/<job>/`. `root` and `job`
 * are validated by resolveConfig; this only joins them.
 */
export function jobPrefix(root: string, job: string): string {
  return `${root}/${job}/`;
}

/** `<prefix>plan`: the durable plan record. */
export function planKey(prefix: string): string {
  return `${prefix}plan`;
}

/** `<prefix>leader`: the leadership key. */
export function leaderKey(prefix: string): string {
  return `${prefix}leader`;
}

/** `<prefix>publish`: the leader's publication fence, put by every assignment write (its revision orders them). */
export function publishKey(prefix: string): string {
  return `${prefix}publish`;
}

/** `<prefix>control`: the operators' record (pause, evacuations), honoured by the leader. */
export function controlKey(prefix: string): string {
  return `${prefix}control`;
}

/** `<prefix>summary`: the leader's compact summary of the job, read by the tools instead of every split (decision 0040). */
export function summaryKey(prefix: string): string {
  return `${prefix}summary`;
}

/** `<prefix>worker.{instance}`: a worker's presence key. */
export function workerKey(prefix: string, instance: string): string {
  return `${prefix}worker.${encodeId(checkId('instance id', instance))}`;
}

/** `<prefix>spec.{id}`: a split's immutable spec. */
export function specKey(prefix: string, id: string): string {
  return `${prefix}spec.${encodeId(checkId('split id', id))}`;
}

/** `<prefix>split.{id}`: a split's durable ownership record (the fence): epoch, status, owner, attempts. */
export function splitKey(prefix: string, id: string): string {
  return `${prefix}split.${encodeId(checkId('split id', id))}`;
}

/** `<prefix>lease.{id}`: a split's ephemeral ownership key. */
export function leaseKey(prefix: string, id: string): string {
  return `${prefix}lease.${encodeId(checkId('split id', id))}`;
}

/** `<prefix>assign.{instance}`: an instance's published assignment. */
export function assignKey(prefix: string, instance: string): string {
  return `${prefix}assign.${encodeId(checkId('instance id', instance))}`;
}

/** `<prefix>divide.{instance}`: the divisions the leader asks of that instance's running splits (decision 0063). */
export function divideKey(prefix: string, instance: string): string {
  return `${prefix}divide.${encodeId(checkId('instance id', instance))}`;
}

/** `<prefix>progress.{id}`: a split's committed progress, written in the owner's fenced transaction. */
export function progressKey(prefix: string, id: string): string {
  return `${prefix}progress.${encodeId(checkId('split id', id))}`;
}

/** The most buckets a packed job has (decision 0037). */
export const MAX_BUCKETS = 65536;
/** The most pages one bucket of a packed job may have (a page's number is below it). */
export const MAX_PAGES = 1 << 20;

function checkPage(bucket: number, page: number): string {
  if (!Number.isInteger(bucket) || bucket < 0 || bucket >= MAX_BUCKETS || !Number.isInteger(page) || page < 0 || page >= MAX_PAGES) {
    throw new SplitfleetError('INVALID_INPUT', `queue page ${bucket}.${page}: bucket must be an integer 0 ≤ b < ${MAX_BUCKETS} and page 0 ≤ p < ${MAX_PAGES}`);
  }
  return `${bucket}.${page}`;
}

/** `<prefix>queue.{bucket}.{page}`: a page of a packed job's queue (immutable, written only by the leader). */
export function queueKey(prefix: string, bucket: number, page: number): string {
  return `${prefix}queue.${checkPage(bucket, page)}`;
}

/** `<prefix>folded.{bucket}.{page}`: which splits of that queue page are folded back as completed. */
export function foldedKey(prefix: string, bucket: number, page: number): string {
  return `${prefix}folded.${checkPage(bucket, page)}`;
}

/** The largest leader generation or fold sequence number a `result` key names (ten decimal digits). */
export const MAX_FOLD_NUMBER = 9_999_999_999;

/**
 * `<prefix>result.{generation}.{seq}`: the final progress of the splits folded by the `seq`-th
 * fold-back of the leader of `generation` (decision 0069). Unique by construction: a generation
 * has one leader, which numbers its own fold-backs.
 */
export function resultKey(prefix: string, generation: number, seq: number): string {
  if (!Number.isInteger(generation) || generation < 0 || generation > MAX_FOLD_NUMBER || !Number.isInteger(seq) || seq < 0 || seq > MAX_FOLD_NUMBER) {
    throw new SplitfleetError('INVALID_INPUT', `result ${generation}.${seq}: generation and seq must be integers 0 ≤ x ≤ ${MAX_FOLD_NUMBER}`);
  }
  return `${prefix}result.${generation}.${seq}`;
}

/** The prefix under which every queue page of one bucket lives (`<prefix>queue.{bucket}.`). */
export function bucketPrefix(prefix: string, bucket: number): string {
  return `${prefix}queue.${checkPage(bucket, 0).split('.')[0]}.`;
}

/** The prefix under which every key of one kind lives, for ranged reads and watches. */
export function kindPrefix(prefix: string, kind: Exclude<KeyKind, 'plan' | 'leader' | 'control' | 'publish' | 'summary'>): string {
  return `${prefix}${kind}.`;
}

export type ParsedKey =
  | { kind: 'plan' }
  | { kind: 'leader' }
  | { kind: 'control' }
  | { kind: 'publish' }
  | { kind: 'summary' }
  | { kind: 'worker' | 'assign' | 'divide'; id: string }
  | { kind: 'spec' | 'split' | 'progress' | 'lease'; id: string }
  | { kind: 'queue' | 'folded'; bucket: number; page: number }
  | { kind: 'result'; generation: number; seq: number }
  | { kind: 'unknown' };

/** A canonical decimal below `limit` (no sign, no leading zero), or undefined. */
function decimal(s: string, limit: number): number | undefined {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(s)) return undefined;
  const n = Number(s);
  return n < limit ? n : undefined;
}

/**
 * What a key under `prefix` names, with the raw (decoded) id. Total: anything
 * else (another prefix, an unknown kind, a singleton with a suffix, a keyed
 * kind whose id part is not the one encoding of a valid id, a nested job's
 * key) is `{ kind: 'unknown' }`; the caller decides whether that is worth a warning.
 */
export function parseKey(prefix: string, key: string): ParsedKey {
  if (!key.startsWith(prefix)) return { kind: 'unknown' };
  const rest = key.slice(prefix.length);
  const dot = rest.indexOf('.');
  const kind = dot < 0 ? rest : rest.slice(0, dot);
  const idKind = ID_KIND.get(kind);
  if (idKind === undefined) return { kind: 'unknown' };
  if (idKind === 'none') {
    return dot < 0 ? { kind: kind as 'plan' | 'leader' | 'control' | 'publish' | 'summary' } : { kind: 'unknown' };
  }
  if (dot < 0) return { kind: 'unknown' };
  if (idKind === 'fold') {
    const [g, q, more] = rest.slice(dot + 1).split('.');
    const generation = decimal(g ?? '', MAX_FOLD_NUMBER + 1);
    const seq = decimal(q ?? '', MAX_FOLD_NUMBER + 1);
    if (generation === undefined || seq === undefined || more !== undefined) return { kind: 'unknown' };
    return { kind: 'result', generation, seq };
  }
  if (idKind === 'page') {
    const [b, p, more] = rest.slice(dot + 1).split('.');
    const bucket = decimal(b ?? '', MAX_BUCKETS);
    const page = decimal(p ?? '', MAX_PAGES);
    if (bucket === undefined || page === undefined || more !== undefined) return { kind: 'unknown' };
    return { kind: kind as 'queue' | 'folded', bucket, page };
  }
  const id = decodeId(rest.slice(dot + 1));
  if (id === undefined) return { kind: 'unknown' };
  return { kind: kind as 'worker' | 'assign' | 'divide' | 'spec' | 'split' | 'progress' | 'lease', id };
}
