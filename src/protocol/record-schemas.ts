/**
 * What a record must be to decode, field by field (zod, one schema per key
 * kind): the types, ranges and cross-field rules every record is checked
 * against, and the words of each refusal. Used by records.ts, which adds the
 * envelope (size and depth bounds, schema version, fingerprint, key id).
 *
 * Pure: no I/O, no clock.
 */
import { z } from 'zod';
import { MAX_TIMER_MS } from '../config.js';
import { isValidWeight } from '../split-model.js';
import { idProblem } from './keys.js';
import { MAX_RECORD_DEPTH } from './record-bounds.js';
import { SCHEMA_VERSION, type Json, type RecordKind } from './record-types.js';

/**
 * A value read from the store, as an error message shows it: scalars as JS prints them, strings
 * quoted and cut at 40 characters, an object or array by its kind only (a record is untrusted and
 * may be large; the message must stay short). Not the assignment input's (validate.ts), which shows
 * the whole value.
 */
export function describeStoredValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  return Array.isArray(v) ? 'an array' : typeof v;
}

/** A record field's value may nest one level less than the record (its object counts 1). */
const FIELD_DEPTH = MAX_RECORD_DEPTH - 1;

/**
 * JSON this build can write back: finite numbers, plain objects, nested at
 * most `maxDepth` levels (a scalar is 0). Iterative, so a deeply nested value
 * cannot overflow the stack.
 */
export function isJson(value: unknown, maxDepth = FIELD_DEPTH): value is Json {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  // Two parallel stacks (values, depths): no allocation per node.
  const stack: unknown[] = [value];
  const depths: number[] = [0];
  while (stack.length > 0) {
    const v = stack.pop();
    const depth = depths.pop()!;
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') { if (!Number.isFinite(v)) return false; continue; }
    if (depth >= maxDepth) return false;
    if (Array.isArray(v)) {
      for (const x of v) { stack.push(x); depths.push(depth + 1); }
      continue;
    }
    if (typeof v !== 'object') return false;
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    for (const x of Object.values(v)) { stack.push(x); depths.push(depth + 1); }
  }
  return true;
}

const int = (min: number) => z.int({
  error: (iss) => `must be an integer ${min} ≤ x ≤ Number.MAX_SAFE_INTEGER (got ${describeStoredValue(iss.input)})`,
}).min(min, { error: (iss) => `must be an integer ≥ ${min} (got ${describeStoredValue(iss.input)})` });
/** An integer in [min, max], refused in words naming both. */
const intUpTo = (min: number, max: number) => z.int({
  error: (iss) => `must be an integer ${min} ≤ x ≤ ${max} (got ${describeStoredValue(iss.input)})`,
}).min(min, { error: (iss) => `must be an integer ${min} ≤ x ≤ ${max} (got ${describeStoredValue(iss.input)})` })
  .max(max, { error: (iss) => `must be an integer ${min} ≤ x ≤ ${max} (got ${describeStoredValue(iss.input)})` });
/** The latest instant a JS Date can hold (epoch ms): a `notBefore` beyond it is no time at all. */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;
/** A split's weight: the split model's rule (split-model.ts), refused in the words of int(0). */
const weight = () => z.custom<number>((v) => isValidWeight(v), {
  error: (iss) => (Number.isSafeInteger(iss.input)
    ? `must be an integer ≥ 0 (got ${describeStoredValue(iss.input)})`
    : `must be an integer 0 ≤ x ≤ Number.MAX_SAFE_INTEGER (got ${describeStoredValue(iss.input)})`),
});
/** A share of a split's work: a finite number 0 ≤ x ≤ 1. */
const share = () => z.number({ error: (iss) => `must be a number 0 ≤ x ≤ 1 (got ${describeStoredValue(iss.input)})` })
  .check(z.refine((n: number) => Number.isFinite(n) && n >= 0 && n <= 1, { error: (iss) => `must be a number 0 ≤ x ≤ 1 (got ${describeStoredValue(iss.input)})` }));
/** The most divisions one `divide.{instance}` record asks for: one per running split, and no member runs more lanes than this. */
export const MAX_DIVISION_ASKS = 1024;
const str = () => z.string({ error: (iss) => `must be a string (got ${describeStoredValue(iss.input)})` });
const idStr = () => str().check(z.refine((s: string) => idProblem(s) === undefined, {
  error: (iss) => `${idProblem(iss.input)} (got ${describeStoredValue(iss.input)})`,
}));
/** A summed weight: a finite number ≥ 0 (a sum of safe integers may pass MAX_SAFE_INTEGER). */
const total = () => z.number({ error: (iss) => `must be a finite number ≥ 0 (got ${describeStoredValue(iss.input)})` })
  .check(z.refine((n: number) => Number.isFinite(n) && n >= 0, { error: (iss) => `must be a finite number ≥ 0 (got ${describeStoredValue(iss.input)})` }));
const json = () => z.custom<Json>((v) => isJson(v), {
  error: `must be JSON (null, a boolean, a finite number, a string, an array or a plain object) nested at most ${FIELD_DEPTH} deep`,
});
export const FP_SHAPE = /^[0-9a-f]{16}$/;
const stamp = {
  v: z.literal(SCHEMA_VERSION),
  minor: int(0).optional(),
  fp: str().regex(FP_SHAPE, { error: 'must be 16 lowercase hex characters' }),
};

/** The most splits one queue page holds (decision 0037). */
export const PAGE_SPLITS = 1024;
/** Characters of a summary's `stuck` reason, at most (the leader cuts a longer one). */
export const MAX_STUCK_CHARS = 600;

/** Bytes of a page's folded bitset, at most. */
const FOLDED_BYTES = PAGE_SPLITS / 8;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** A page's parallel arrays: the first rule they break, or undefined. One pass, no zod per element (a page holds 1,024). */
function pageArraysProblem(r: { ids: unknown; weights: unknown; descriptors: unknown }): string | undefined {
  const { ids, weights, descriptors } = r;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > PAGE_SPLITS) return `ids: must be an array of 1 to ${PAGE_SPLITS} split ids`;
  if (!Array.isArray(weights) || weights.length !== ids.length) return 'weights: must be an array as long as ids';
  if (!Array.isArray(descriptors) || descriptors.length !== ids.length) return 'descriptors: must be an array as long as ids';
  const seen = new Set<string>();
  for (let i = 0; i < ids.length; i++) {
    const problem = idProblem(ids[i]);
    if (problem !== undefined) return `ids.${i}: ${problem}`;
    // One hash lookup a split, not two (has, then add): a page holds 1,024.
    seen.add(ids[i]);
    if (seen.size === i) return `ids.${i}: ${describeStoredValue(ids[i])} appears twice in the page`;
    if (!isValidWeight(weights[i])) return `weights.${i}: must be an integer 0 ≤ x ≤ Number.MAX_SAFE_INTEGER (got ${describeStoredValue(weights[i])})`;
  }
  // A descriptor sits one level deeper than in a spec record (inside the array).
  if (!isJson(descriptors, FIELD_DEPTH)) return `descriptors: must be JSON nested at most ${FIELD_DEPTH - 1} deep each`;
  return undefined;
}

const planStamp = { ...stamp, v: z.union([z.literal(1), z.literal(2)], { error: (iss) => `must be 1 or 2 (got ${describeStoredValue(iss.input)})` }) };

export const SCHEMAS = {
  plan: z.looseObject({
    ...planStamp, generation: int(0),
    layout: z.literal('packed', { error: (iss) => `must be 'packed' or absent (got ${describeStoredValue(iss.input)})` }).optional(),
    buckets: int(1).optional(),
    final: z.boolean({ error: (iss) => `must be a boolean (got ${describeStoredValue(iss.input)})` }),
    planned: int(0), cursor: json().optional(),
    verdict: z.enum(['complete', 'stalled'], {
      error: (iss) => `must be 'complete' or 'stalled' (got ${describeStoredValue(iss.input)})`,
    }).optional(),
    hook: z.enum(['pending', 'ran'], {
      error: (iss) => `must be 'pending' or 'ran' (got ${describeStoredValue(iss.input)})`,
    }).optional(),
    hookKey: str().optional(),
  }).check(z.refine((r) => r.verdict === undefined || r.final, {
    error: 'only a final plan has a verdict', path: ['verdict'],
  }), z.refine((r) => r.hook === undefined || r.verdict !== undefined, {
    error: 'only a plan with a verdict has a hook state', path: ['hook'],
  }), z.refine((r) => (r.v === 2) === (r.layout === 'packed'), {
    error: 'a packed plan (layout \'packed\') is schema version 2, and only a packed plan is', path: ['layout'],
  }), z.refine((r) => r.buckets === undefined || (r.layout === 'packed' && r.buckets <= 65536 && (r.buckets & (r.buckets - 1)) === 0), {
    error: 'must be a power of two ≤ 65536, on a packed plan only', path: ['buckets'],
  })),
  leader: z.looseObject({ ...stamp, instance: idStr(), generation: int(0) }),
  publish: z.looseObject({ ...stamp, generation: int(0) }),
  control: z.looseObject({
    ...stamp,
    paused: z.boolean({ error: (iss) => `must be a boolean (got ${describeStoredValue(iss.input)})` }),
    evacuated: z.array(z.looseObject({ instance: idStr(), nonce: str().min(1, { error: 'must not be empty' }) }), {
      error: (iss) => `must be an array of { instance, nonce } (got ${describeStoredValue(iss.input)})`,
    }),
  }).check(z.refine((r) => r.evacuated.every((e, i) => i === 0 || r.evacuated[i - 1]!.instance < e.instance), {
    error: 'must be sorted by instance in JS string order, one entry per instance', path: ['evacuated'],
  })),
  worker: z.looseObject({
    ...stamp, instance: idStr(), maxInFlight: int(1), prefetch: int(0).optional(),
    nonce: str().min(1, { error: 'must not be empty' }),
  }),
  spec: z.looseObject({ ...stamp, id: idStr(), weight: weight(), descriptor: json(), generation: int(0), parent: idStr().optional() }),
  split: z.looseObject({
    ...stamp, id: idStr(), epoch: int(0),
    status: z.enum(['runnable', 'completed', 'quarantined'], {
      error: (iss) => `must be 'runnable', 'completed' or 'quarantined' (got ${describeStoredValue(iss.input)})`,
    }),
    owner: str().check(z.refine((s: string) => s === '' || idProblem(s) === undefined, {
      error: (iss) => `must be '' (no owner) or an instance id: ${idProblem(iss.input)}`,
    })),
    // A backoff is bounded: a time JS dates can hold, a wait Node's timers can (decision 0060).
    attempts: int(0), reason: str().optional(), notBefore: intUpTo(0, MAX_EPOCH_MS).optional(), waitMs: intUpTo(0, MAX_TIMER_MS).optional(),
  }).check(z.refine((r) => r.owner === '' || (r.status === 'runnable' && r.epoch >= 1), {
    // An owner is a tenancy in progress: only a runnable split has one, and
    // only after a claim (which bumps the epoch from 0).
    error: 'must be empty unless status is runnable and epoch ≥ 1', path: ['owner'],
  })),
  progress: z.looseObject({
    ...stamp, id: idStr(), epoch: int(1), progress: json(),
    done: share().optional(), divisions: int(1).optional(), end: json().optional(), weight: weight().optional(), declined: int(1).optional(),
  }),
  lease: z.looseObject({
    ...stamp, id: idStr(), owner: idStr(),
    nonce: str().min(1, { error: 'must not be empty' }), epoch: int(1),
  }),
  assign: z.looseObject({
    ...stamp, instance: idStr(), generation: int(0), splits: z.array(idStr(), {
      error: (iss) => `must be an array of split ids (got ${describeStoredValue(iss.input)})`,
    }),
  }).check(z.refine((r) => r.splits.every((s, i) => i === 0 || r.splits[i - 1]! < s), {
    error: 'must be sorted in JS string order with no duplicates', path: ['splits'],
  })),
  divide: z.looseObject({
    ...stamp, instance: idStr(), generation: int(0),
    asks: z.array(z.looseObject({ id: idStr(), epoch: int(1), seq: int(1), share: share() }), {
      error: (iss) => `must be an array of { id, epoch, seq, share } (got ${describeStoredValue(iss.input)})`,
    }).max(MAX_DIVISION_ASKS, { error: `must hold at most ${MAX_DIVISION_ASKS} asks` }),
  }).check(z.refine((r) => r.asks.every((a, i) => i === 0 || r.asks[i - 1]!.id < a.id), {
    error: 'must be sorted by id in JS string order, one ask per split', path: ['asks'],
  })),
  summary: z.looseObject({
    ...stamp, generation: int(0), writtenAt: int(0), planned: int(0),
    final: z.boolean({ error: (iss) => `must be a boolean (got ${describeStoredValue(iss.input)})` }), seeded: int(0),
    queued: int(0), queuedWeight: total(), backoff: int(0), backoffWeight: total(),
    held: int(0), heldWeight: total(), revoking: int(0),
    completed: int(0), completedWeight: total(), quarantined: int(0), quarantinedWeight: total(), parked: int(0),
    members: int(0), lanes: int(0), residuals: int(1).optional(),
    stuck: str().check(z.refine((s: string) => s.length <= MAX_STUCK_CHARS, { error: `must be at most ${MAX_STUCK_CHARS} characters` })).optional(),
    // Loose per entry: a newer build's kinds and fields pass, and job-history.ts keeps the ones it knows.
    history: z.array(z.looseObject({ rev: int(0), at: int(0), kind: str() }, {
      error: (iss) => `must be an object { rev, at, kind, … } (got ${describeStoredValue(iss.input)})`,
    }), { error: (iss) => `must be an array of events (got ${describeStoredValue(iss.input)})` }).optional(),
  }).check(z.refine((r) => r.revoking <= r.held, { error: 'must be at most held (a revocation in flight is a held split)', path: ['revoking'] })),
  queue: z.looseObject({
    ...stamp, bucket: int(0), page: int(0), generation: int(0), ids: z.array(z.unknown()), weights: z.array(z.unknown()), descriptors: z.array(z.unknown()),
  }, { error: 'must be a queue page' }).check(z.refine((r) => pageArraysProblem(r) === undefined, {
    error: (iss) => pageArraysProblem(iss.input as { ids: unknown; weights: unknown; descriptors: unknown }) ?? 'a broken page',
  })),
  folded: z.looseObject({
    ...stamp, bucket: int(0), page: int(0), pageGeneration: int(0).optional(),
    bits: str().check(z.refine((s: string) => BASE64.test(s) && s.length <= Math.ceil(FOLDED_BYTES / 3) * 4, {
      error: `must be base64 of at most ${FOLDED_BYTES} bytes`,
    })),
  }),
  result: z.looseObject({
    ...stamp, generation: int(0), seq: int(0),
    splits: z.array(z.looseObject({ id: idStr(), progress: json(), end: json().optional() }), {
      error: (iss) => `must be an array of { id, progress, end? } (got ${describeStoredValue(iss.input)})`,
    }).min(1, { error: 'must hold at least one split' }),
  }).check(z.refine((r) => new Set(r.splits.map((s) => s.id)).size === r.splits.length, {
    error: 'must name each split once', path: ['splits'],
  })),
} satisfies { [K in RecordKind]: z.ZodType };
