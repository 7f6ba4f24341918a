/**
 * The pool's object results, built in the caller's turns: from a thread's
 * reply (`rebuild`: the caller's ids written to their output places in row
 * order, then each member's list sliced out) and again from the kept last
 * result (`fromKept`: a repeat). Keys are defined in order with
 * defineProperty, so "__proto__" is an ordinary key.
 *
 * Invariants: every result has fresh lists (the caller may mutate them);
 * no turn builds more than `chunk` rows. Pure: the only waiting is `LoopSlices`.
 */
import type { SplitFields } from './fields.js';
import { inSlices, type LoopSlices } from './object-task.js';
import { PAGE_BITS, PAGE_MASK, PAGE_ROWS, pagedSlice } from './pages.js';
import type { AssignmentInput, AssignmentResult, AssignmentStats } from '../types.js';
import { NO_SLOT, type ThreadReply } from '../wire.js';

/**
 * A result kept as its keys in order and its lists laid out in `places`
 * (key k's is places[off[k], off[k + 1]), paged: pages.ts), not as an object: a copy of it is
 * built key by key in turns, where `Object.entries` of a 10k-key result took
 * 7–34 ms in one turn (a profile of a pool's first calls at 1M). The places
 * are the pool's own list (`placesFor`), which only the next decision that
 * is not a repeat writes again, once this result is no longer kept.
 */
export interface KeptResult {
  keys: string[];
  places: readonly (readonly string[])[];
  off: Uint32Array;
  stats: AssignmentStats;
}

/** A fresh result from `kept` (new lists, keys in the same order), in turns. */
export function fromKept(kept: KeptResult, chunk: number, loop: LoopSlices): Promise<AssignmentResult> {
  const { keys, places, off } = kept;
  return resultInSlices(keys.length, (k) => keys[k]!, (k) => pagedSlice(places, off[k]!, off[k + 1]!), kept.stats, chunk, loop, null);
}

/**
 * The object result from the thread's places and the caller's own ids, in
 * turns (its keys recorded in `keys`, when given): each row's id is written to its
 * output place in `places`, in row order, then each key's list is sliced
 * out. Why: gathering ids place by place read them at random, one cache miss
 * an id (40–150 ms at 1M); in row order the ids are read in sequence and the
 * writes land in one list (a scratch benchmark at 1M, load ~0.5: 19–54 ms).
 */
export async function rebuild(
  input: AssignmentInput, read: SplitFields, reply: Extract<ThreadReply, { kind: 'object' }>, chunk: number, loop: LoopSlices,
  keys: string[] | null, places: string[][],
): Promise<AssignmentResult> {
  const { memberOrder, off, slot } = reply;
  await inSlices(slot.length, chunk, loop, (from, to) => {
    for (let i = from; i < to; ) {
      const p = i >>> PAGE_BITS;
      const base = p << PAGE_BITS;
      const end = Math.min(to, base + PAGE_ROWS);
      const ids = read.pages[p]!.ids;
      for (; i < end; i++) {
        const q = slot[i]!;
        if (q !== NO_SLOT) places[q >>> PAGE_BITS]![q & PAGE_MASK] = ids[i - base]!;
      }
    }
    return true;
  });
  await loop.next();
  const list = (k: number): string[] => pagedSlice(places, off[k]!, off[k + 1]!);
  return resultInSlices(memberOrder.length, (k) => input.members[memberOrder[k]!]!.id, list, reply.stats, chunk, loop, keys);
}

/**
 * A result whose k-th key is key(k) with list(k), keys defined in order (with
 * defineProperty, so "__proto__" is an ordinary key), in turns: a turn ends
 * after `chunk` rows, or once it is due (asked every STEP_ROWS rows). Each
 * key is also pushed to `keep`, when given.
 */
async function resultInSlices(
  keys: number, key: (k: number) => string, list: (k: number) => string[], stats: AssignmentStats, chunk: number, loop: LoopSlices,
  keep: string[] | null,
): Promise<AssignmentResult> {
  const assignment: Record<string, string[]> = {};
  for (let k = 0; k < keys; ) {
    if (k > 0) await loop.next();
    k = defineKeys(assignment, k, keys, key, list, chunk, loop, keep);
  }
  return { assignment, stats: { ...stats } };
}

/** Rows a result step builds before it asks whether its turn is over. */
const STEP_ROWS = 2048;

/** Keys from `k` on, until `chunk` rows or the turn is due (a plain function: see object-task.ts inSlices); the next key. */
function defineKeys(
  to: Record<string, string[]>, k: number, keys: number, key: (k: number) => string, list: (k: number) => string[], chunk: number, loop: LoopSlices,
  keep: string[] | null,
): number {
  let built = 0;
  let asked = 0;
  for (; k < keys && built < chunk; k++) {
    if (built - asked >= STEP_ROWS) {
      if (loop.due()) break;
      asked = built;
    }
    const value = list(k);
    const name = key(k);
    Object.defineProperty(to, name, { value, enumerable: true, writable: true, configurable: true });
    keep?.push(name);
    built += value.length + 1;
  }
  return k;
}
