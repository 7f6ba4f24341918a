/**
 * An indexed binary heap over member indices 0..m-1, ordered by a caller's
 * `before(a, b)`. Supports update and removal of any member in O(log m), which
 * the improving pass needs (a move changes two members' keys). Pure.
 */
export class IndexedHeap {
  private readonly heap: Int32Array;
  private readonly pos: Int32Array;
  private n = 0;

  constructor(
    capacity: number,
    private readonly before: (a: number, b: number) => boolean,
  ) {
    this.heap = new Int32Array(capacity);
    this.pos = new Int32Array(capacity).fill(-1);
  }

  get size(): number {
    return this.n;
  }

  has(x: number): boolean {
    return this.pos[x]! >= 0;
  }

  /** The first member, or -1 when empty. */
  top(): number {
    return this.n > 0 ? this.heap[0]! : -1;
  }

  push(x: number): void {
    this.heap[this.n] = x;
    this.pos[x] = this.n;
    this.n++;
    this.up(this.n - 1);
  }

  pop(): number {
    const x = this.heap[0]!;
    this.remove(x);
    return x;
  }

  remove(x: number): void {
    const i = this.pos[x]!;
    this.pos[x] = -1;
    this.n--;
    if (i === this.n) return;
    const last = this.heap[this.n]!;
    this.heap[i] = last;
    this.pos[last] = i;
    this.up(i);
    this.down(this.pos[last]!);
  }

  /** Restores order after `x`'s key changed (either direction). */
  update(x: number): void {
    const i = this.pos[x]!;
    this.up(i);
    this.down(this.pos[x]!);
  }

  private up(i: number): void {
    const h = this.heap;
    const x = h[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const y = h[p]!;
      if (!this.before(x, y)) break;
      h[i] = y;
      this.pos[y] = i;
      i = p;
    }
    h[i] = x;
    this.pos[x] = i;
  }

  private down(i: number): void {
    const h = this.heap;
    const x = h[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= this.n) break;
      if (c + 1 < this.n && this.before(h[c + 1]!, h[c]!)) c++;
      const y = h[c]!;
      if (!this.before(y, x)) break;
      h[i] = y;
      this.pos[y] = i;
      i = c;
    }
    h[i] = x;
    this.pos[x] = i;
  }
}
