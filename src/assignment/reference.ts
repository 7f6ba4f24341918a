/**
 * The desired assignment, reference implementation: the readable statement of
 * the algorithm in docs/assignment.md, and the oracle the WASM engine is
 * differential-tested against output for output.
 *
 * Pure: no I/O, no clock, no randomness, no dependence on input order. Every
 * tie is broken by the seeded content key of an id (src/hash.ts), then by the
 * id itself, so two different ids never compare equal.
 *
 * Passes (spec: work-assignment.md, "Balance objective"):
 *   1. sticky  — heaviest first, a split stays with its live lease owner while
 *                that member has a free lane; then with the first live member
 *                with a free lane among (previous assignee, record owner);
 *   2. fill    — the rest, heaviest first, to the least-loaded member with a
 *                free lane until every lane is full (the remainder is queued);
 *   3. improve — from the donor that keeps the most load after giving its
 *                lightest split, to the lightest member with a free lane: the
 *                heaviest split that takes neither side across the mean, else
 *                the donor's lightest, one the donor does not hold before one
 *                it does (a held split costs a drain); admitted only when
 *                load(from) > load(to) + w; until no move is admissible.
 */
import { compareKeyed, hashInto, seedState } from '../hash.js';
import { IndexedHeap } from './heap.js';
import { loadFigures } from './quality.js';
import { DEFAULT_CAP, type AssignmentInput, type AssignmentResult } from './types.js';
import { scaleWeight, weightShift } from './units.js';
import { effectiveWeight, handOutOrder } from './hand-out-order.js';
import { validateAssignmentInput } from './validate.js';

/**
 * The backstop on improving moves; far above what any real input needs
 * (realistic weights take under 1 × assigned; a pile-up on one member with
 * weights from 1 to 2^53 was measured at 3 ×).
 */
export function maxImprovingMoves(assigned: number): number {
  return Math.max(4096, 8 * assigned);
}

interface Member {
  id: string;
  cap: number;
}

/** Members in canonical order: by seeded content key, then id. */
export function canonicalMembers(input: AssignmentInput): Member[] {
  const state = seedState(input.seed);
  const defaultCap = input.defaultCap ?? DEFAULT_CAP;
  const keys = new Uint32Array(2 * input.members.length);
  const tagged = input.members.map((m, i) => {
    hashInto(state, m.id, keys, 2 * i);
    return { id: m.id, cap: m.cap ?? defaultCap, lo: keys[2 * i]!, hi: keys[2 * i + 1]! };
  });
  tagged.sort((a, b) => compareKeyed(a.lo, a.hi, a.id, b.lo, b.hi, b.id));
  return tagged.map(({ id, cap }) => ({ id, cap }));
}

/**
 * Computes the desired assignment with the reference engine. `computeMs` is
 * left at 0: timing is the caller's business (see engine.ts), which keeps
 * this function free of clocks.
 *
 * Why one function: it is the readable statement of the algorithm, read top
 * to bottom as the passes of the module comment (each marked `// Pass n`),
 * and assembly/passes.ts `decide` mirrors it expression by expression; the
 * passes share the owner, count and load columns and the free-member heap,
 * which split functions would each take as arguments.
 */
export function referenceAssignment(input: AssignmentInput): AssignmentResult {
  validateAssignmentInput(input);
  const members = canonicalMembers(input);
  const m = members.length;
  const memberIndex = new Map<string, number>();
  members.forEach((mem, i) => memberIndex.set(mem.id, i));
  const cap = members.map((mem) => mem.cap);
  const live = (id: string | null | undefined): number =>
    id === undefined || id === null ? -1 : (memberIndex.get(id) ?? -1);

  // The claimable pool, heaviest first, ties by content key then id.
  const reserved = new Set(input.reserved ?? []);
  const state = seedState(input.seed);
  const keys = new Uint32Array(2);
  const pool = input.splits
    .filter((s) => (s.status ?? 'runnable') === 'runnable' && !reserved.has(s.id))
    .map((s) => {
      hashInto(state, s.id, keys, 0);
      return {
        id: s.id,
        weight: effectiveWeight(s.weight),
        lo: keys[0]!,
        hi: keys[1]!,
        lease: live(s.leaseOwner),
        candidates: [live(s.previous), live(s.recordOwner)],
      };
    });
  pool.sort(handOutOrder);
  const n = pool.length;

  // Balancing units (units.ts): exact integers ≤ 2^53.
  const shift = weightShift(n, n > 0 ? pool[0]!.weight : 1);
  const w = pool.map((s) => scaleWeight(s.weight, shift));

  const owner = new Int32Array(n).fill(-1);
  const count = new Int32Array(m);
  const load = new Float64Array(m);
  const assign = (i: number, to: number): void => {
    owner[i] = to;
    count[to]!++;
    load[to]! += w[i]!;
  };
  const free = (j: number): boolean => j >= 0 && count[j]! < cap[j]!;

  // Pass 1, sticky: live lease owners first, then previous assignee / record owner.
  for (let i = 0; i < n; i++) {
    if (free(pool[i]!.lease)) assign(i, pool[i]!.lease);
  }
  for (let i = 0; i < n; i++) {
    if (owner[i] !== -1) continue;
    for (const c of pool[i]!.candidates) {
      if (free(c)) {
        assign(i, c);
        break;
      }
    }
  }

  // Pass 2, fill: least-loaded member with a free lane, ties by canonical order.
  const lighter = (a: number, b: number): boolean => load[a]! < load[b]! || (load[a] === load[b] && a < b);
  const freeHeap = new IndexedHeap(m, lighter);
  for (let j = 0; j < m; j++) if (free(j)) freeHeap.push(j);
  for (let i = 0; i < n && freeHeap.size > 0; i++) {
    if (owner[i] !== -1) continue;
    const to = freeHeap.top();
    assign(i, to);
    if (free(to)) freeHeap.update(to);
    else freeHeap.remove(to);
  }

  // Pass 3, improve. Each member's splits as ascending pool positions, so the
  // last one is its lightest and weights are non-increasing along the list.
  const held: number[][] = Array.from({ length: m }, () => []);
  let assigned = 0;
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (owner[i] === -1) continue;
    held[owner[i]!]!.push(i);
    assigned++;
    total += w[i]!;
  }
  const mean = m > 0 ? total / m : 0;
  // A donor's key is the load it keeps after giving its lightest split: the
  // donor giving from the top of this heap falls least, so no other member
  // gains an improving move into it, which is what keeps churn near the
  // minimum the new balance needs (docs/assignment.md, "The move rule").
  const keeps = (j: number): number => {
    const list = held[j]!;
    return load[j]! - w[list[list.length - 1]!]!;
  };
  const keepsMore = (a: number, b: number): boolean => {
    const ka = keeps(a);
    const kb = keeps(b);
    return ka > kb || (ka === kb && a < b);
  };
  const donors = new IndexedHeap(m, keepsMore);
  for (let j = 0; j < m; j++) if (held[j]!.length > 0) donors.push(j);

  const backstop = maxImprovingMoves(assigned);
  let moves = 0;
  let backstopHit = false;
  while (freeHeap.size > 0 && donors.size > 0) {
    const to = freeHeap.top();
    const from = donors.top();
    // Admissible iff load(from) > load(to) + w(lightest of from). No donor
    // keeps more than the top one, and none can give to a member lighter than
    // the lightest free one, so when the top fails no move is admissible.
    // (from === to fails too: keeps(to) < load(to).)
    if (!(keeps(from) > load[to]!)) break;
    if (moves === backstop) {
      backstopHit = true;
      break;
    }
    const list = held[from]!;
    const pick = list[chooseMove(list, w, Math.min(load[from]! - mean, mean - load[to]!), (i) => pool[i]!.lease === from)]!;
    // Both members' keys change: take both out of both heaps before the
    // move and put them back after, so no sift ever runs against a stale key.
    freeHeap.remove(to);
    if (freeHeap.has(from)) freeHeap.remove(from);
    donors.remove(from);
    if (donors.has(to)) donors.remove(to);
    moveSplit(held, from, to, pick);
    load[from]! -= w[pick]!;
    load[to]! += w[pick]!;
    count[from]!--;
    count[to]!++;
    owner[pick] = to;
    moves++;
    if (held[from]!.length > 0) donors.push(from);
    donors.push(to);
    freeHeap.push(from);
    if (free(to)) freeHeap.push(to);
  }

  // Output: every member → sorted ids; stats in unscaled effective weights.
  const byMember: string[][] = Array.from({ length: m }, () => []);
  const realLoad = new Float64Array(m);
  const assignedWeights: number[] = [];
  for (let i = 0; i < n; i++) {
    const j = owner[i]!;
    if (j === -1) continue;
    byMember[j]!.push(pool[i]!.id);
    realLoad[j]! += pool[i]!.weight;
    assignedWeights.push(pool[i]!.weight);
  }
  return {
    assignment: assignmentRecord(members.map((mem) => mem.id), byMember),
    stats: {
      assigned,
      queued: n - assigned,
      improvingMoves: moves,
      backstopHit,
      ...loadFigures(realLoad, assignedWeights),
      computeMs: 0,
    },
  };
}

/**
 * The move rule: within the donor's list (weights non-increasing), the
 * heaviest split with w ≤ `room` (the smaller of the donor's excess over the
 * mean and the receiver's deficit below it), so neither side crosses the mean;
 * when none fits, the donor's lightest split (the smallest overshoot).
 * A split the donor holds (its live lease owner) costs a drain to move, one
 * only named for it (prefetched) costs nothing: among the splits that fit,
 * the heaviest the donor does not hold is taken before any it holds, and
 * among the lightest (when none fits) likewise (decision 0057).
 * Returns an index into `list`.
 */
export function chooseMove(list: readonly number[], w: ArrayLike<number>, room: number, heldByDonor: (i: number) => boolean): number {
  const len = list.length;
  let lo = 0;
  let hi = len;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (w[list[mid]!]! <= room) hi = mid;
    else lo = mid + 1;
  }
  // The search for one not held looks at MOVE_SCAN candidates at most: a step stays O(log k)
  // plus a constant, however long a donor's list (a member named thousands of splits).
  if (lo < len) {
    for (let k = lo; k < len && k < lo + MOVE_SCAN; k++) if (!heldByDonor(list[k]!)) return k;
    return lo;
  }
  const lightest = w[list[len - 1]!]!;
  for (let k = len - 1; k >= 0 && k > len - 1 - MOVE_SCAN && w[list[k]!]! === lightest; k--) if (!heldByDonor(list[k]!)) return k;
  return len - 1;
}

/** How many candidates the move rule looks at for one the donor does not hold (assembly/passes.ts: the same). */
export const MOVE_SCAN = 64;

function moveSplit(held: number[][], from: number, to: number, pick: number): void {
  const src = held[from]!;
  src.splice(lowerIndex(src, pick), 1);
  const dst = held[to]!;
  dst.splice(lowerIndex(dst, pick), 0, pick);
}

function lowerIndex(list: readonly number[], x: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** member ids (any order) + their split lists → record with ids and lists sorted in JS string order. */
function assignmentRecord(ids: string[], lists: string[][]): Record<string, string[]> {
  const order = ids.map((id, j) => ({ id, j })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const out: Record<string, string[]> = {};
  // defineProperty, so an id such as "__proto__" is an ordinary key.
  for (const { id, j } of order) {
    Object.defineProperty(out, id, { value: lists[j]!.sort(), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
