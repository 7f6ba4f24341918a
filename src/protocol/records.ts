/**
 * The codecs of every record a job keeps on the store (see keys.ts for where
 * each lives, and docs/keys.md for the fields).
 *
 * Invariants:
 * - Every record is one JSON object carrying `v` (the schema version, 1) and
 *   `fp` (fingerprintHash of the job's fingerprint). A record this build cannot
 *   read is a thrown, clearly worded error, never a silent skip.
 * - Decoding is strict about what this build knows: wrong types, another major
 *   schema version (a newer one is refused as such),
 *   an id that disagrees with its key → INVALID_RECORD naming the key; another
 *   job's fingerprint → FINGERPRINT_MISMATCH with both values. Fields it does
 *   not know, within its major version, are a newer minor's: tolerated, and
 *   kept (after the known ones, sorted) when the record is rewritten.
 * - Encoding is canonical: fixed field order and sorted assignment ids, so
 *   equal records encode to equal bytes and a leader can skip a write whose
 *   bytes are unchanged. What we encode always decodes (same schema both ways).
 * - Bounded both ways (record-bounds.ts, decision 0026): size, nesting depth,
 *   duplicate keys, and the number and size of unknown fields. So a record
 *   that decodes always re-encodes: encodeRecord never throws for a decoded
 *   record, except RECORD_TOO_LARGE when a caller grows it past the size bound.
 *
 * Pure: no I/O, no clock.
 */

import type { z } from 'zod';
import { SplitfleetError } from '../errors.js';
import { contentKey } from '../hash.js';
import { jsStringOrder } from '../js-order.js';
import { decodeId, utf8ByteLength } from './keys.js';
import { parsePageText } from './page-ids.js';
import {
  duplicateKeysProblem, MAX_RECORD_BYTES, REENCODE_CHECK_UNITS, scanJsonText, sizeProblem, unknownFieldsProblem,
} from './record-bounds.js';
import { describeStoredValue, FP_SHAPE, isJson, SCHEMAS } from './record-schemas.js';
import {
  PACKED_PLAN_VERSION, SCHEMA_MINOR, SCHEMA_VERSION,
  type Json, type JobLayout, type QueueRecord, type FoldedRecord, type ResultRecord, type ResultEntry, type SplitStatus, type JobVerdictRecord, type PlanRecord, type LeaderRecord, type PublishRecord, type Evacuation, type ControlRecord, type WorkerRecord, type SpecRecord, type SplitRecord, type ProgressRecord, type LeaseRecord, type SummaryRecord, type StoredHistoryEntry, type AssignRecord, type DivideRecord, type DivisionAsk, type RecordTypes, type RecordKind,
} from './record-types.js';

// The types' home is record-types.ts; the codec re-exports them, so a caller of encode/decode needs one import.
export { PACKED_PLAN_VERSION, SCHEMA_MINOR, SCHEMA_VERSION };
export type { Json, JobLayout, QueueRecord, FoldedRecord, ResultRecord, ResultEntry, SplitStatus, JobVerdictRecord, PlanRecord, LeaderRecord, PublishRecord, Evacuation, ControlRecord, WorkerRecord, SpecRecord, SplitRecord, ProgressRecord, LeaseRecord, SummaryRecord, StoredHistoryEntry, AssignRecord, DivideRecord, DivisionAsk, RecordTypes, RecordKind };

/** The fingerprints last hashed (a process has one a job; the claim and decode paths ask per split). */
const hashed = new Map<string, string>();
const HASHED_KEPT = 64;

/**
 * The short, stable hash of a fingerprint that every record carries:
 * 16 lowercase hex characters (64 bits of the seeded content hash). Hashed
 * once per fingerprint (the last HASHED_KEPT kept): every claim, decode and
 * fold-back asks for it.
 */
export function fingerprintHash(fingerprint: string): string {
  const known = hashed.get(fingerprint);
  if (known !== undefined) return known;
  const [lo, hi] = contentKey('splitfleet.fingerprint', fingerprint);
  const out = hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
  if (hashed.size >= HASHED_KEPT) hashed.delete(hashed.keys().next().value!);
  hashed.set(fingerprint, out);
  return out;
}


/** Which field of a record must equal the id in its key. */
const KEY_ID_FIELD: { [K in RecordKind]: 'id' | 'instance' | undefined } = {
  plan: undefined, leader: undefined, control: undefined, publish: undefined, worker: 'instance', spec: 'id', split: 'id', progress: 'id', lease: 'id', assign: 'instance', divide: 'instance',
  summary: undefined, queue: undefined, folded: undefined, result: undefined,
};

/** Kinds whose key names a page (`{bucket}.{page}`), checked against the record's `bucket` and `page`. */
const PAGE_KINDS: ReadonlySet<string> = new Set(['queue', 'folded']);
/** Kinds whose key names a fold (`{generation}.{seq}`), checked against the record's `generation` and `seq`. */
const FOLD_KINDS: ReadonlySet<string> = new Set(['result']);

function describeIssues(error: z.ZodError): string {
  return error.issues.map((iss) => {
    if (iss.code === 'unrecognized_keys') return `unknown field ${iss.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    const path = iss.path.length > 0 ? iss.path.join('.') : 'record';
    return `${path}: ${iss.message}`;
  }).join('; ');
}

/** A page record's `bucket` and `page` are the ones its key names (`queue.{bucket}.{page}`). */
function checkPageKey(key: string, kind: RecordKind, r: { bucket: number; page: number }): void {
  const named = key.slice(key.lastIndexOf('/') + 1).slice(kind.length + 1);
  if (`${r.bucket}.${r.page}` !== named) {
    throw invalid(key, kind, `bucket ${r.bucket} and page ${r.page} do not match the key's ${describeStoredValue(named)}`);
  }
}

/** A fold's record's `generation` and `seq` are the ones its key names (`result.{generation}.{seq}`). */
function checkFoldKey(key: string, kind: RecordKind, r: { generation: number; seq: number }): void {
  const named = key.slice(key.lastIndexOf('/') + 1).slice(kind.length + 1);
  if (`${r.generation}.${r.seq}` !== named) {
    throw invalid(key, kind, `generation ${r.generation} and seq ${r.seq} do not match the key's ${describeStoredValue(named)}`);
  }
}

/**
 * The kind and raw id a key names, by its last segment (an encoded id contains
 * no '/'); id null when the key's id part is not the one encoding of an id.
 */
function keyTail(key: string): { kind: string; id: string | null | undefined } {
  const tail = key.slice(key.lastIndexOf('/') + 1);
  const dot = tail.indexOf('.');
  return dot < 0 ? { kind: tail, id: undefined } : { kind: tail.slice(0, dot), id: decodeId(tail.slice(dot + 1)) ?? null };
}

// ---- encoding --------------------------------------------------------------

/** Field order of each record: the canonical encoding writes exactly these, in this order. */
export const FIELD_ORDER: { [K in RecordKind]: readonly (keyof RecordTypes[K])[] } = {
  plan: ['v', 'fp', 'generation', 'final', 'planned', 'cursor', 'verdict', 'layout', 'buckets', 'hook', 'hookKey'],
  leader: ['v', 'fp', 'instance', 'generation'],
  control: ['v', 'fp', 'paused', 'evacuated'],
  publish: ['v', 'fp', 'generation'],
  worker: ['v', 'fp', 'instance', 'maxInFlight', 'prefetch', 'nonce'],
  spec: ['v', 'fp', 'id', 'weight', 'descriptor', 'generation', 'parent'],
  split: ['v', 'fp', 'id', 'epoch', 'status', 'owner', 'attempts', 'reason', 'notBefore', 'waitMs'],
  progress: ['v', 'fp', 'id', 'epoch', 'progress', 'done', 'divisions', 'end', 'weight', 'declined'],
  lease: ['v', 'fp', 'id', 'owner', 'nonce', 'epoch'],
  assign: ['v', 'fp', 'instance', 'generation', 'splits'],
  divide: ['v', 'fp', 'instance', 'generation', 'asks'],
  summary: ['v', 'fp', 'generation', 'writtenAt', 'planned', 'final', 'seeded', 'queued', 'queuedWeight', 'backoff', 'backoffWeight',
    'held', 'heldWeight', 'revoking', 'completed', 'completedWeight', 'quarantined', 'quarantinedWeight', 'parked', 'members', 'lanes', 'residuals', 'stuck', 'history'],
  queue: ['v', 'fp', 'bucket', 'page', 'generation', 'ids', 'weights', 'descriptors'],
  folded: ['v', 'fp', 'bucket', 'page', 'bits', 'pageGeneration'],
  result: ['v', 'fp', 'generation', 'seq', 'splits'],
};

function describeRecord(kind: RecordKind, record: object): string {
  const r = record as { id?: unknown; instance?: unknown };
  const field = KEY_ID_FIELD[kind];
  if (field === 'instance') return `${kind} record of instance ${describeStoredValue(r.instance)}`;
  if (field === 'id') return `${kind} record of split ${describeStoredValue(r.id)}`;
  return `${kind} record`;
}

/** Sorted by instance, each entry with its fields in order (any newer-minor fields kept after them). */
function canonicalEvacuations(list: readonly Evacuation[] | unknown): unknown {
  if (!Array.isArray(list)) return list;
  return [...(list as Evacuation[])]
    .map((e) => {
      if (typeof e !== 'object' || e === null) return e;
      const { instance, nonce, ...rest } = e;
      return { instance, nonce, ...rest };
    })
    .sort((a, b) => jsStringOrder(a.instance, b.instance));
}

function canonicalText<K extends RecordKind>(kind: K, record: RecordTypes[K]): string {
  const source = (kind === 'assign'
    ? { ...record, splits: [...(record as AssignRecord).splits].sort() }
    : kind === 'control'
      ? { ...record, evacuated: canonicalEvacuations((record as ControlRecord).evacuated) }
      : record) as Record<string, unknown>;
  const parsed = SCHEMAS[kind].safeParse(source);
  if (!parsed.success) {
    throw new SplitfleetError('INVALID_RECORD',
      `refusing to write ${describeRecord(kind, record)}: ${describeIssues(parsed.error)}`);
  }
  const ordered: Record<string, unknown> = {};
  const known = FIELD_ORDER[kind] as readonly string[];
  for (const f of known) {
    if (source[f] !== undefined) ordered[f] = source[f];
  }
  // A newer minor's fields, kept as they came (sorted, so equal records still encode to equal bytes).
  if (typeof source.minor === 'number' && source.minor > 0) ordered.minor = source.minor;
  const unknown = unknownFields(kind, source);
  const problem = unknownFieldsProblem(source, unknown, (v) => isJson(v));
  if (problem !== undefined) throw new SplitfleetError('INVALID_RECORD', `refusing to write ${describeRecord(kind, record)}: ${problem}`);
  for (const f of unknown.sort()) ordered[f] = source[f];
  try {
    return JSON.stringify(ordered);
  } catch (cause) {
    // Only a value no schema looks into (a newer minor's field of an evacuation entry) can get here.
    throw new SplitfleetError('INVALID_RECORD', `refusing to write ${describeRecord(kind, record)}: not encodable as JSON (${(cause as Error).message})`, { cause });
  }
}

/** The fields of `source` this build does not know (`minor` aside), present. */
function unknownFields(kind: RecordKind, source: Readonly<Record<string, unknown>>, keys = Object.keys(source)): string[] {
  const known = FIELD_ORDER[kind] as readonly string[];
  return keys.filter((k) => k !== 'minor' && source[k] !== undefined && !known.includes(k));
}

export interface EncodeOptions {
  /** Refuse (RECORD_TOO_LARGE) when the encoding exceeds this many UTF-8 bytes (never more than MAX_RECORD_BYTES). */
  maxBytes?: number;
}

/**
 * Encodes a record canonically (fixed field order; assignment ids sorted).
 * @throws SplitfleetError('INVALID_RECORD') when the record breaks its schema
 *   (assignment ids duplicated, a weight out of range, …);
 *   SplitfleetError('RECORD_TOO_LARGE') when it exceeds `options.maxBytes`, or
 *   MAX_RECORD_BYTES (what decodeRecord reads), whichever is lower.
 */
export function encodeRecord<K extends RecordKind>(kind: K, record: RecordTypes[K], options: EncodeOptions = {}): string {
  const text = canonicalText(kind, record);
  const maxBytes = Math.min(options.maxBytes ?? MAX_RECORD_BYTES, MAX_RECORD_BYTES);
  // A UTF-16 unit is at most 3 UTF-8 bytes: short texts need no count.
  if (text.length * 3 > maxBytes) {
    const bytes = utf8ByteLength(text);
    if (bytes > maxBytes) {
      const hint = kind === 'assign'
        ? `; an assignment names at most the instance's max_in_flight split ids, so lower max_in_flight or shorten split ids`
        : '';
      throw new SplitfleetError('RECORD_TOO_LARGE',
        `${describeRecord(kind, record)} encodes to ${bytes} bytes, over the limit of ${maxBytes}: `
        + `every record must fit in one store request${hint}`);
    }
  }
  return text;
}

/** The exact size, in UTF-8 bytes, of an assignment record's canonical encoding. */
export function assignmentRecordBytes(record: AssignRecord): number {
  return utf8ByteLength(canonicalText('assign', record));
}

// ---- decoding --------------------------------------------------------------

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function invalid(key: string, kind: RecordKind, problem: string): SplitfleetError {
  return new SplitfleetError('INVALID_RECORD', `${kind} record at ${key}: ${problem}`);
}

/**
 * Decodes and strictly validates the record stored at `key`.
 *
 * @param kind what the caller expects the key to hold; a key of another kind is refused.
 * @param key the full key (named in every error; its id must match the record's).
 * @param raw the stored value, as text or as the store's bytes (must be UTF-8).
 * @param expectedFp fingerprintHash of this job's fingerprint.
 * @throws SplitfleetError('INVALID_RECORD') for bad UTF-8 or JSON, a record beyond
 *   the bounds of record-bounds.ts (size, nesting, duplicate keys, unknown
 *   fields), another schema version, a broken field, or an id that disagrees
 *   with the key;
 *   SplitfleetError('FINGERPRINT_MISMATCH') naming both hashes.
 */
export function decodeRecord<K extends RecordKind>(
  kind: K, key: string, raw: string | Uint8Array, expectedFp: string,
): RecordTypes[K] {
  const tail = keyTail(key);
  const paged = PAGE_KINDS.has(kind);
  const fold = FOLD_KINDS.has(kind);
  if ((paged || fold) && tail.kind === kind) tail.id = undefined; // its numbers are checked against the record below
  if (tail.kind !== kind || (KEY_ID_FIELD[kind] === undefined) !== (tail.id === undefined)) {
    throw invalid(key, kind, `the key is not a ${kind} key`);
  }
  if (tail.id === null) throw invalid(key, kind, 'the key\'s id is not encoded as keys encode ids (docs/keys.md)');
  if (typeof raw !== 'string') {
    const tooLarge = sizeProblem(raw.length);
    if (tooLarge !== undefined) throw invalid(key, kind, tooLarge);
  }
  let text: string;
  try {
    text = typeof raw === 'string' ? raw : UTF8.decode(raw);
  } catch (cause) {
    throw new SplitfleetError('INVALID_RECORD', `${kind} record at ${key}: not valid UTF-8`, { cause });
  }
  if (typeof raw === 'string' && text.length * 3 > MAX_RECORD_BYTES) {
    const tooLarge = sizeProblem(utf8ByteLength(text));
    if (tooLarge !== undefined) throw invalid(key, kind, tooLarge);
  }
  // Before JSON.parse: a hostile nesting must never reach a recursive parser or stringify.
  const scan = scanJsonText(text);
  if (scan.problem !== undefined) throw invalid(key, kind, scan.problem);
  let value: unknown;
  try {
    // A page's ids are read from the text: JSON.parse would internalize every short one (page-ids.ts).
    value = kind === 'queue' ? parsePageText(text) : JSON.parse(text);
  } catch (cause) {
    throw new SplitfleetError('INVALID_RECORD',
      `${kind} record at ${key}: not valid JSON (${(cause as Error).message})`, { cause });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(key, kind, `must be a JSON object (got ${describeStoredValue(value)})`);
  }
  const obj = value as Record<string, unknown>;
  const fields = Object.keys(obj);
  const twice = duplicateKeysProblem(text, obj, fields.length, scan);
  if (twice !== undefined) throw invalid(key, kind, twice);
  if (obj.v !== SCHEMA_VERSION && !(kind === 'plan' && obj.v === PACKED_PLAN_VERSION)) {
    throw invalid(key, kind, obj.v === undefined
      ? `has no schema version field v; this build reads version ${SCHEMA_VERSION}`
      : typeof obj.v === 'number' && Number.isInteger(obj.v) && obj.v > SCHEMA_VERSION
        ? `schema version ${obj.v} is a newer major version than this build reads (${SCHEMA_VERSION}): upgrade splitfleet to read it`
        : `schema version ${describeStoredValue(obj.v)}; this build reads version ${SCHEMA_VERSION} only`);
  }
  // Checked before the shape: a record of another job is best reported as such.
  if (typeof obj.fp === 'string' && FP_SHAPE.test(obj.fp) && obj.fp !== expectedFp) {
    throw new SplitfleetError('FINGERPRINT_MISMATCH',
      `${kind} record at ${key} carries fingerprint hash ${obj.fp}, but this job's is ${expectedFp}: `
      + 'it was written by a job with different identity-bearing settings under the same prefix');
  }
  const parsed = SCHEMAS[kind].safeParse(obj);
  if (!parsed.success) throw invalid(key, kind, describeIssues(parsed.error));
  // Of the parsed JSON, not zod's output: zod drops a "__proto__" field silently.
  const extra = unknownFieldsProblem(obj, unknownFields(kind, obj, fields), (v) => isJson(v));
  if (extra !== undefined) throw invalid(key, kind, extra);
  const record = parsed.data as unknown as RecordTypes[K];
  if (text.length > REENCODE_CHECK_UNITS) {
    // Re-encoding can lengthen numbers written short (1e20): a long record is re-encoded once to be sure it fits.
    const bytes = utf8ByteLength(canonicalText(kind, record));
    if (bytes > MAX_RECORD_BYTES) {
      throw invalid(key, kind, `re-encodes to ${bytes} bytes, over the limit of ${MAX_RECORD_BYTES} (rule: a record must be writable back in one store request)`);
    }
  }
  if (paged) checkPageKey(key, kind, record as unknown as { bucket: number; page: number });
  if (fold) checkFoldKey(key, kind, record as unknown as { generation: number; seq: number });
  const idField = KEY_ID_FIELD[kind];
  if (idField !== undefined) {
    const inRecord = (record as unknown as Record<string, string>)[idField];
    if (inRecord !== tail.id) {
      throw invalid(key, kind, `${idField} ${describeStoredValue(inRecord)} does not match the key's ${describeStoredValue(tail.id)}`);
    }
  }
  return record;
}

/** `decode()`, or undefined when a record it decodes is unreadable (INVALID_RECORD); other errors thrown. */
export function readable<T>(decode: () => T): T | undefined {
  try {
    return decode();
  } catch (e) {
    if (e instanceof SplitfleetError && e.code === 'INVALID_RECORD') return undefined;
    throw e;
  }
}
