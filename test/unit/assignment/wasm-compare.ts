/**
 * What the WASM differential tests share (wasm-differential.test.ts,
 * wasm-collisions.test.ts): building build/engine.wasm when it is missing or
 * older than assembly/, and comparing the engine's outputs with the
 * reference's, key order and stats included.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { referenceAssignment } from '../../../src/assignment/reference.js';
import type { AssignmentInput, AssignmentResult } from '../../../src/assignment/types.js';
import { columnarAssignment, columnarAssignmentResult, wasmAssignment } from '../../../src/assignment/wasm.js';
import { isSplitfleetError } from '../../../src/errors.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Builds build/engine.wasm when it is missing or older than any file of assembly/ (a beforeAll of 120 s). */
export function buildEngineIfStale(): void {
  const wasm = `${root}build/engine.wasm`;
  const newest = Math.max(...readdirSync(`${root}assembly`).map((f) => statSync(`${root}assembly/${f}`).mtimeMs));
  if (!existsSync(wasm) || statSync(wasm).mtimeMs < newest) {
    execFileSync(process.execPath, [`${root}scripts/build-wasm.mjs`], { stdio: 'inherit' });
  }
}

export type Outcome = { ok: true; result: AssignmentResult } | { ok: false; code: string; message: string };

export function outcome(f: () => AssignmentResult): Outcome {
  try {
    return { ok: true, result: f() };
  } catch (e) {
    if (!isSplitfleetError(e)) throw e;
    return { ok: false, code: e.code, message: e.message };
  }
}

/** Deep equality including the order of keys at every level. */
export function expectIdentical(got: AssignmentResult, want: AssignmentResult): void {
  expect(Object.keys(got.assignment)).toEqual(Object.keys(want.assignment));
  for (const id of Object.keys(want.assignment)) expect(got.assignment[id]).toEqual(want.assignment[id]);
  expect(Object.keys(got.stats)).toEqual(Object.keys(want.stats));
  expect({ ...got.stats, computeMs: 0 }).toEqual({ ...want.stats, computeMs: 0 });
}

export function expectSameAsReference(input: AssignmentInput): AssignmentResult | null {
  const want = outcome(() => referenceAssignment(input));
  const got = outcome(() => wasmAssignment(input));
  if (!want.ok) {
    expect(got).toEqual(want);
    return null;
  }
  expect(got.ok).toBe(true);
  if (got.ok) expectIdentical(got.result, want.result);
  return want.result;
}

/** A pool holding `input`, built through the incremental API. */
export function poolOf(input: AssignmentInput): ColumnarPool {
  const pool = new ColumnarPool(input.seed, input.defaultCap === undefined ? {} : { defaultCap: input.defaultCap });
  pool.setMembers(input.members);
  for (const s of input.splits) {
    pool.upsertSplit(s.id, s.weight, s.status ?? 'runnable');
    pool.setLeaseOwner(s.id, s.leaseOwner ?? null);
    pool.setRecordOwner(s.id, s.recordOwner ?? null);
    pool.setPrevious(s.id, s.previous ?? null);
  }
  pool.setReserved(input.reserved ?? []);
  return pool;
}

/** Both columnar outputs equal the reference on the pool's object form. */
export function expectColumnarSame(pool: ColumnarPool): void {
  const want = referenceAssignment(pool.toInput());
  const decision = columnarAssignment(pool);
  expect({ ...decision.stats, computeMs: 0 }).toEqual({ ...want.stats, computeMs: 0 });
  const byMember = new Map<string, string[]>();
  for (let r = 0; r < pool.rowCount; r++) {
    const j = decision.assignee[r]!;
    if (j < 0) continue;
    const id = pool.idAt(r)!;
    const list = byMember.get(decision.members[j]!) ?? [];
    list.push(id);
    byMember.set(decision.members[j]!, list);
  }
  for (const [member, ids] of Object.entries(want.assignment)) {
    expect((byMember.get(member) ?? []).sort()).toEqual(ids);
  }
  expectIdentical(columnarAssignmentResult(pool), want);
}
