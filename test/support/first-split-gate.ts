/**
 * Holding the first split a fleet runs while a test damages the store: the
 * handler calls `hold(id)`, which waits on the gate for the first id it sees
 * and returns at once for every other; `first` is that id, `open()` lets it go.
 */
export interface FirstSplitGate {
  readonly first: string | undefined;
  hold(id: string): Promise<void>;
  open(): void;
}

export function firstSplitGate(): FirstSplitGate {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let first: string | undefined;
  return {
    get first() {
      return first;
    },
    async hold(id: string) {
      first ??= id;
      if (id === first) await gate;
    },
    open: () => open(),
  };
}
