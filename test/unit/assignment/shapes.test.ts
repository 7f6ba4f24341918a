/**
 * The engine's output does not depend on how the caller built its split
 * objects (issue 14): literal, spread from objects whose weight field holds
 * doubles (each such spread gets a hidden class of its own in V8), class
 * instances, extra fields, another property order, getters and null
 * prototypes all give the reference's output, through `desiredAssignment`
 * (first call and the memo's repeat) and through `AssignmentPool`. Also: the
 * thread's hash over code units equals hash.ts. Needs `npm run build`.
 * A failing property prints its seed; replay with { seed, path } in fc.assert.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { desiredAssignment } from '../../../src/assignment/engine.js';
import {
  judgeBlock, PROBE_EVERY, readGeneric, readNamed, readSplits, settleProbe, splitFields, SURPRISE, type ReaderChoice, type SplitFields,
} from '../../../src/assignment/object/fields.js';
import { AssignmentPool } from '../../../src/assignment/pool.js';
import { PAGE_BITS, PAGE_MASK } from '../../../src/assignment/object/pages.js';
import type { AssignmentInput, AssignmentResult, SplitInput } from '../../../src/assignment/types.js';
import { assignmentInput, settle } from './generators.js';

type Shape = 'literal' | 'spread' | 'class' | 'extra' | 'reordered' | 'getters' | 'null-prototype'
  | 'prototype-getters' | 'non-enumerable' | 'inherited' | 'shadowed';
// The last four have fields a `for…in` does not see (fields.ts reads those with a second lookup).
const SHAPES: readonly Shape[] = [
  'literal', 'spread', 'class', 'extra', 'reordered', 'getters', 'null-prototype', 'prototype-getters', 'non-enumerable', 'inherited', 'shadowed',
];

/** Fields as getters on the class's prototype (non-enumerable, inherited). */
class Accessors {
  readonly #s: SplitInput;
  constructor(s: SplitInput) {
    this.#s = s;
  }
  get id(): string { return this.#s.id; }
  get weight(): number { return this.#s.weight; }
  get status(): SplitInput['status'] { return this.#s.status; }
  get leaseOwner(): string | null | undefined { return this.#s.leaseOwner; }
  get recordOwner(): string | null | undefined { return this.#s.recordOwner; }
  get previous(): string | null | undefined { return this.#s.previous; }
}

class Held {
  constructor(
    readonly id: string,
    readonly weight: number,
    readonly status: SplitInput['status'],
    readonly leaseOwner: string | null | undefined,
    readonly recordOwner: string | null | undefined,
    readonly previous: string | null | undefined,
  ) {}
}

/** `s` rebuilt as `shape`, field values equal (absent fields stay absent where the shape allows). */
function reshape(shape: Shape, s: SplitInput): SplitInput {
  const own = Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined)) as unknown as SplitInput;
  switch (shape) {
    case 'literal':
      return own;
    case 'spread': {
      // A source whose weight field has held a double, as in a real job with weights ≥ 2^30.
      const base = { id: own.id, weight: 2 ** 40 + 0.5 };
      base.weight = own.weight;
      const { id: _, weight: __, ...rest } = own;
      return { ...base, ...rest };
    }
    case 'class':
      return new Held(own.id, own.weight, own.status, own.leaseOwner, own.recordOwner, own.previous);
    case 'extra':
      return { path: `data/${own.id}`, ...own, bytes: own.weight, tags: ['a'] } as SplitInput;
    case 'reordered':
      return Object.fromEntries(Object.entries(own).reverse()) as unknown as SplitInput;
    case 'getters': {
      const o = {};
      for (const [k, v] of Object.entries(own)) Object.defineProperty(o, k, { get: () => v, enumerable: true });
      return o as SplitInput;
    }
    case 'null-prototype':
      return Object.assign(Object.create(null) as object, own) as SplitInput;
    case 'prototype-getters':
      return new Accessors(own) as unknown as SplitInput;
    case 'non-enumerable': {
      const o = { id: own.id };
      for (const [k, v] of Object.entries(own)) if (k !== 'id') Object.defineProperty(o, k, { value: v, enumerable: false });
      return o as SplitInput;
    }
    case 'inherited':
      // Every field but the id on the prototype, enumerable there.
      return Object.assign(Object.create(own) as object, { id: own.id }) as SplitInput;
    case 'shadowed': {
      // The prototype's fields are wrong; own non-enumerable fields shadow them (what s.weight reads).
      const wrong = { weight: own.weight + 1, leaseOwner: 'nobody', recordOwner: 'nobody', previous: 'nobody', status: 'completed' };
      const o = Object.assign(Object.create(wrong) as object, { id: own.id }) as Record<string, unknown>;
      for (const k of Object.keys(wrong)) Object.defineProperty(o, k, { value: (own as unknown as Record<string, unknown>)[k], enumerable: false });
      return o as unknown as SplitInput;
    }
  }
}

const reshaped = (input: AssignmentInput, shape: Shape): AssignmentInput => ({ ...input, splits: input.splits.map((s) => reshape(shape, s)) });

function comparable(r: AssignmentResult): unknown {
  const { computeMs: _, ...stats } = r.stats;
  return { keys: Object.keys(r.assignment), assignment: r.assignment, stats };
}

const pool = new AssignmentPool({ threads: 1 });
afterAll(() => pool.close());

describe('every input shape gives the same output', () => {
  it('desiredAssignment (first call and repeat) and the reference, cold and settled', () => {
    fc.assert(
      fc.property(assignmentInput(), (cold) => {
        const inputs = [cold, settle(cold, desiredAssignment(cold, { engine: 'reference' }).assignment)];
        for (const input of inputs) {
          const want = comparable(desiredAssignment(input, { engine: 'reference' }));
          for (const shape of SHAPES) {
            const given = reshaped(input, shape);
            expect(comparable(desiredAssignment(given)), shape).toEqual(want);
            expect(comparable(desiredAssignment(given)), `${shape}, repeat`).toEqual(want);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('through AssignmentPool', async () => {
    await fc.assert(
      fc.asyncProperty(assignmentInput(), async (input) => {
        const want = comparable(desiredAssignment(input, { engine: 'reference' }));
        for (const shape of SHAPES) expect(comparable(await pool.assign(reshaped(input, shape))), shape).toEqual(want);
      }),
      { numRuns: 25 },
    );
  });

  it('a bad field is refused with the validator\'s error whatever the shape', () => {
    const input: AssignmentInput = { seed: 's', members: [{ id: 'a' }], splits: [{ id: 'x', weight: 1 }, { id: 'y', weight: -1 }] };
    for (const shape of SHAPES) {
      expect(() => desiredAssignment(reshaped(input, shape)), shape).toThrow('splits[1].weight: must be an integer');
    }
  });
});

/** Rows [0, n) of a read, as plain data. */
function rows(f: SplitFields, n: number): unknown {
  // A page no read reached holds what a fresh one would ('' ids, null owners).
  const list = (field: 'ids' | 'lease' | 'prev' | 'rec'): unknown[] =>
    Array.from({ length: n }, (_, i) => f.pages[i >>> PAGE_BITS]?.[field][i & PAGE_MASK] ?? (field === 'ids' ? '' : null));
  return { ids: list('ids'), weight: [...f.weight.subarray(0, n)], status: [...f.status.subarray(0, n)],
    lease: list('lease'), prev: list('prev'), rec: list('rec') };
}

/** `n` splits cycled from `input`, the shape changing every `run` rows (so a long read crosses readers' probes). */
function mixed(input: AssignmentInput, n: number, run: number): SplitInput[] {
  return Array.from({ length: n }, (_, i) => reshape(SHAPES[Math.floor(i / run) % SHAPES.length]!, input.splits[i % input.splits.length]!));
}

describe('fields.ts: both readers, and the choice between them, read the same columns', () => {
  it('readNamed = readGeneric for every shape, rows and refusals', () => {
    fc.assert(
      fc.property(assignmentInput(), (input) => {
        for (const shape of SHAPES) {
          const splits = input.splits.map((s) => reshape(shape, s));
          const a = splitFields(splits.length);
          const b = splitFields(splits.length);
          expect(readNamed(splits, 0, splits.length, a), shape).toBe(readGeneric(splits, 0, splits.length, b));
          expect(rows(a, splits.length), shape).toEqual(rows(b, splits.length));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('readSplits across probes and shape changes = readGeneric; a bad row past a probe is found', () => {
    fc.assert(
      fc.property(assignmentInput(), fc.integer({ min: 1, max: 3000 }), fc.nat(), (input, run, badAt) => {
        fc.pre(input.splits.length > 0);
        const splits: unknown[] = mixed(input, 6000, run);
        const a = splitFields(splits.length);
        const b = splitFields(splits.length);
        expect(readSplits(splits, 0, splits.length, a)).toBe(-1);
        expect(readGeneric(splits, 0, splits.length, b)).toBe(-1);
        expect(rows(a, splits.length)).toEqual(rows(b, splits.length));
        // In calls of a block or less (as AssignmentPool reads), where a probe spans calls.
        const c = splitFields(splits.length);
        for (let from = 0; from < splits.length; from += 1 + (from * 7919) % 1500) {
          expect(readSplits(splits, from, Math.min(splits.length, from + 1 + (from * 7919) % 1500), c)).toBe(-1);
        }
        expect(rows(c, splits.length)).toEqual(rows(b, splits.length));
        const bad = badAt % splits.length;
        splits[bad] = { id: 'x', weight: 0.5 };
        expect(readSplits(splits, 0, splits.length, splitFields(splits.length))).toBe(bad);
      }),
      { numRuns: 15 },
    );
  });

  it('the probe schedule: the faster reader wins, probes thin out by doubling, and a surprise probes again at once', () => {
    const choice: ReaderChoice = splitFields(1).choice;
    expect(choice.untilProbe).toBe(0);
    const gaps: number[] = [];
    for (let k = 0; k < 12; k++) {
      settleProbe(choice, k % 2 === 0 ? 0.03 : 0.2, 0.1);
      expect(choice.named).toBe(k % 2 === 0);
      expect(choice.chosenPerRow).toBe(k % 2 === 0 ? 0.03 : 0.1);
      gaps.push(choice.untilProbe);
      // Blocks as fast as the probe said (or faster) never call for a probe.
      while (choice.untilProbe > 0) judgeBlock(choice, choice.chosenPerRow * (choice.untilProbe % 3), 1024);
    }
    expect(gaps).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 256, 256, 256]);
    expect(Math.max(...gaps)).toBe(PROBE_EVERY);
    // A block SURPRISE times slower than its reader's probe: probe at the next block, and thin out from the start.
    settleProbe(choice, 0.03, 0.1);
    judgeBlock(choice, 0.03 * SURPRISE * 1.01, 1024);
    expect(choice.untilProbe).toBe(0);
    settleProbe(choice, 0.5, 0.1);
    expect([choice.named, choice.untilProbe]).toEqual([false, 1]);
    // ...but not on a short block (its time is mostly the clock's), nor just under the bound.
    judgeBlock(choice, 1000, 100);
    expect([choice.untilProbe, choice.interval]).toEqual([0, 2]);
    settleProbe(choice, 0.03, 0.1);
    judgeBlock(choice, 0.03 * SURPRISE * 0.99, 1024);
    expect(choice.untilProbe).toBe(1);
  });

  it('readSplits reads each field of each row once, probe or not', () => {
    const reads = new Map<string, number>();
    const splits = Array.from({ length: 5000 }, (_, i) => {
      const o = {};
      for (const [k, v] of Object.entries({ id: `s${i}`, weight: i, leaseOwner: 'a', previous: 'b', recordOwner: null, status: 'runnable' })) {
        Object.defineProperty(o, k, { get: () => (reads.set(`${i}.${k}`, (reads.get(`${i}.${k}`) ?? 0) + 1), v), enumerable: true });
      }
      return o;
    });
    expect(readSplits(splits, 0, splits.length, splitFields(splits.length))).toBe(-1);
    expect(reads.size).toBe(5000 * 6);
    expect([...reads.values()].every((c) => c === 1)).toBe(true);
  });
});

