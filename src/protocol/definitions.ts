/**
 * Jobs as data (issue 50; decision 0064): a job's **definition** (a kind and
 * its parameters) written by a process that need not run it, at
 * `<root>/~jobs/<job>`, where every fleet serving the root finds it with one
 * small range watch. `~` is in no job or root name (config.ts), so the index
 * can never be taken for a job's prefix or a nested root.
 *
 * Invariants:
 * - A definition is written once (create-if-absent) and never changed: the
 *   same kind and parameters again is the same job; anything else under that
 *   name is refused, both shown (`sameDefinition`).
 * - The job's fingerprint is a function of its root, name, kind and
 *   parameters (`definitionFingerprint`), so two definitions of one name can
 *   never run as one job, and every process of the job derives the same one.
 * - Parameters are JSON, canonicalised (keys sorted) before hashing, at most
 *   MAX_PARAMS_BYTES.
 *
 * Pure: no I/O, no clock (the submission time comes in as an argument).
 */
import { z } from 'zod';
import { SplitfleetError } from '../errors.js';
import { contentKey } from '../hash.js';
import { utf8ByteLength } from './keys.js';
import { isJson } from './record-schemas.js';
import type { Json } from './record-types.js';

/** The largest parameters a definition holds, in UTF-8 bytes of their JSON: a job's identity, not its data. */
export const MAX_PARAMS_BYTES = 64 * 1024;
/** A kind: what a serving fleet registers a planner and a handler under. */
const KIND = /^[A-Za-z0-9._-]{1,128}$/;

/** A job's definition as written. */
export interface DefinitionRecord {
  v: 1;
  job: string;
  kind: string;
  params: Json;
  /** The fingerprint every process of the job runs under (definitionFingerprint). */
  fingerprint: string;
  /** Epoch ms, the submitter's clock: for people, never compared. */
  submittedAt: number;
}

const SCHEMA = z.looseObject({
  v: z.literal(1),
  job: z.string(),
  kind: z.string().regex(KIND, { error: 'must be 1 to 128 of A-Z a-z 0-9 . _ -' }),
  params: z.custom<Json>((v) => isJson(v), { error: 'must be JSON' }),
  fingerprint: z.string().min(1),
  submittedAt: z.int().min(0),
});

/** `<root>/~jobs/`: the definitions' range under a root. */
export function definitionsPrefix(root: string): string {
  return `${root}/~jobs/`;
}

/** `<root>/~jobs/<job>`: one job's definition. */
export function definitionKey(root: string, job: string): string {
  return `${definitionsPrefix(root)}${job}`;
}

/** The job a definition key names, or undefined for a key outside the range. */
export function jobOfDefinitionKey(root: string, key: string): string | undefined {
  const prefix = definitionsPrefix(root);
  if (!key.startsWith(prefix)) return undefined;
  const job = key.slice(prefix.length);
  return job.length > 0 && !job.includes('/') ? job : undefined;
}

/** JSON with object keys sorted, so equal values give equal text whatever the order they were built in. */
export function canonicalJson(v: Json): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k]!)}`).join(',')}}`;
}

/** The fingerprint of a submitted job: its place, kind and parameters (hashed). */
export function definitionFingerprint(root: string, job: string, kind: string, params: Json): string {
  const [lo, hi] = contentKey(`${kind}\u0000`, canonicalJson(params));
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, '0');
  return `splitfleet-job-v1:${root}/${job}:${kind}:${hex(hi)}${hex(lo)}`;
}

/** The rule a kind or parameters break, naming the field, or undefined. */
export function definitionProblem(kind: unknown, params: unknown): string | undefined {
  if (typeof kind !== 'string' || !KIND.test(kind)) return `kind: must be 1 to 128 of A-Z a-z 0-9 . _ - (got ${JSON.stringify(kind)})`;
  if (params === undefined || !isJson(params)) return 'params: must be JSON (null, a boolean, a finite number, a string, an array or a plain object)';
  const bytes = utf8ByteLength(canonicalJson(params));
  if (bytes > MAX_PARAMS_BYTES) return `params: must be at most ${MAX_PARAMS_BYTES} bytes of JSON (got ${bytes}): a job's parameters name its data, they do not carry it`;
  return undefined;
}

/** A definition record to write. */
export function definitionRecord(root: string, job: string, kind: string, params: Json, submittedAt: number): DefinitionRecord {
  const problem = definitionProblem(kind, params);
  if (problem !== undefined) throw new SplitfleetError('INVALID_INPUT', `job ${job}: ${problem}`);
  return { v: 1, job, kind, params, fingerprint: definitionFingerprint(root, job, kind, params), submittedAt };
}

export function encodeDefinition(rec: DefinitionRecord): string {
  return JSON.stringify({ v: rec.v, job: rec.job, kind: rec.kind, params: rec.params, fingerprint: rec.fingerprint, submittedAt: rec.submittedAt });
}

/** Decodes a definition; INVALID_RECORD naming the key and the field when it cannot. */
export function decodeDefinition(key: string, raw: string): DefinitionRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw new SplitfleetError('INVALID_RECORD', `${key}: not JSON (${(e as Error).message})`);
  }
  const r = SCHEMA.safeParse(parsed);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new SplitfleetError('INVALID_RECORD', `${key}: ${issue.path.join('.') || 'record'}: ${issue.message}`);
  }
  return r.data as DefinitionRecord;
}

/** Whether two definitions are the same job (kind and parameters; the submission time aside). */
export function sameDefinition(a: Pick<DefinitionRecord, 'kind' | 'params'>, b: Pick<DefinitionRecord, 'kind' | 'params'>): boolean {
  return a.kind === b.kind && canonicalJson(a.params) === canonicalJson(b.params);
}
