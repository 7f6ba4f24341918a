/**
 * IdWeights: split id → weight for the splits whose spec the leader has seen
 * and whose record it has not (split-columns.ts `specOnly`), in an id arena
 * and a weight column instead of a `Map`. A term's first listing reads every
 * spec before any split record (`spec.` sorts before `split.`), so at 1M
 * splits this holds 1M entries for a moment, and a `Map` that size rehashes
 * half a million entries in one turn (~50 ms at 512k on an idle machine;
 * decision 0043).
 *
 * Invariant: an id has a weight here iff it holds a row of the arena.
 * Pure: no I/O.
 */
import { IdArena } from '../../assignment/front-door.js';

export class IdWeights {
  private ids = new IdArena();
  private weights = new Float64Array(16);
  private free: number[] = [];
  private next = 0;

  get size(): number {
    return this.ids.size;
  }

  has(id: string): boolean {
    return this.ids.rowOf(id) >= 0;
  }

  get(id: string): number | undefined {
    const r = this.ids.rowOf(id);
    return r < 0 ? undefined : this.weights[r];
  }

  set(id: string, weight: number): void {
    let r = this.ids.rowOf(id);
    if (r < 0) {
      r = this.free.pop() ?? this.next++;
      if (r >= this.weights.length) this.growWeights(2 * this.weights.length);
      this.ids.add(r, id);
    }
    this.weights[r] = weight;
  }

  delete(id: string): boolean {
    const r = this.ids.rowOf(id);
    if (r < 0) return false;
    this.ids.remove(r);
    this.free.push(r);
    // Drained (a listing's specs have all met their records): give back the room reserved for them.
    if (this.ids.size === 0) this.clear();
    return true;
  }

  /** The ids held, in row order (a new string each). */
  *keys(): IterableIterator<string> {
    for (let r = 0; r < this.next; r++) {
      const id = this.ids.idAt(r);
      if (id !== undefined) yield id;
    }
  }

  /** Room for `n` entries at once (a listing or a plan of that many): no index growth while they arrive. */
  reserve(n: number): void {
    this.ids.reserveRows(n);
    if (n > this.weights.length) this.growWeights(n);
  }

  clear(): void {
    this.ids = new IdArena();
    this.weights = new Float64Array(16);
    this.free = [];
    this.next = 0;
  }

  private growWeights(n: number): void {
    const grown = new Float64Array(n);
    grown.set(this.weights);
    this.weights = grown;
  }
}
