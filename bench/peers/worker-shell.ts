/**
 * What the three worker processes of bench:peers share: the configuration
 * (SPLITFLEET_PEER), the JSON lines on stdout, the parent's `go` over IPC,
 * exiting when the parent goes, and the one paced handler: a loop over an
 * item's units (or, divided, a part's) from its committed progress, committing
 * every `commitEvery` units through whatever the system offers, stopping when
 * its attempt is aborted (lease or lock lost) or drained (splitfleet's
 * cooperative release).
 */
import { peerItems, sleep, type Item, type PeerLine, type PeerWorkerConfig } from './items.js';

export function workerConfig(): PeerWorkerConfig {
  return JSON.parse(process.env.SPLITFLEET_PEER ?? '{}') as PeerWorkerConfig;
}

export function itemsById(cfg: PeerWorkerConfig): Map<string, Item> {
  return new Map(peerItems(cfg.items).map((i) => [i.id, i]));
}

/**
 * One JSON line per event, written at once: a pipe write is synchronous on
 * Linux, so a SIGKILL loses at most the line of the moment (batching per tick
 * lost whole completions of a killed worker).
 */
export function emit(cfg: PeerWorkerConfig, line: Omit<PeerLine, 'w' | 't'> & { t?: number }): void {
  process.stdout.write(`${JSON.stringify({ t: Date.now(), w: cfg.worker, ...line })}\n`);
}

/** Resolves on the parent's `go`; the process exits when the parent disconnects or on SIGTERM. */
export function waitForGo(): Promise<void> {
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
  return new Promise((resolve) => {
    process.on('message', (m: unknown) => {
      if (m === 'go') resolve();
    });
  });
}

export interface Attempt {
  item: Item;
  /** Committed progress the attempt starts from (units already done). */
  from: number;
  /**
   * Where the attempt's units come from when it runs a part of the item (splitfleet's divisible
   * range): the part's end as it stands (a division moves it) and the next unit handed out
   * (1-based), undefined when the part has ended. Absent: the item's units in order up to its count.
   */
  range?: { end(): number; next(): Promise<number | undefined> };
  /** The part's id when it is not the item itself (a residual of a division): `p` on the attempt's lines. */
  part?: string;
  /** Aborted when the system says the attempt no longer holds the item. */
  signal?: AbortSignal;
  /** Aborted when the system asks for a cooperative release (splitfleet's drain). */
  drain?: AbortSignal;
  /** Writes progress `n`; false when the store refused it (fenced out). */
  commit(n: number): Promise<boolean>;
  /**
   * Reports progress `n` without waiting, where the system has a way of its own (splitfleet's
   * `advance`: the lane commits the latest on a timer). Without it, `--progress behind` sends
   * `commit` and does not wait for it.
   */
  advance?(n: number): void;
}

/**
 * How the handler reports progress (`bench:peers -- --progress awaited|behind`, handed down as
 * SPLITFLEET_BENCH_PROGRESS): `awaited` (the default) waits for each commit before the next unit,
 * as a handler that must know its progress is kept does; `behind` goes on while it is in flight
 * (splitfleet's `advance`, the queues' write not awaited) and learns of a refusal at the next
 * report. Completions are awaited either way.
 */
export const PROGRESS: 'awaited' | 'behind' = process.env.SPLITFLEET_BENCH_PROGRESS === 'behind' ? 'behind' : 'awaited';

let attempts = 0;

/**
 * Runs one attempt; 'done' when every unit of the item (or of its part) is processed (the caller
 * completes), 'aborted' or 'drained' otherwise. Returns the attempt's number for the lines
 * the caller adds (`done`).
 */
export async function runAttempt(cfg: PeerWorkerConfig, a: Attempt): Promise<{ status: 'done' | 'aborted' | 'drained'; n: number; units: number }> {
  const n = ++attempts;
  const id = a.item.id;
  const p = a.part === undefined ? {} : { p: a.part };
  emit(cfg, { ev: 'start', id, ...p, from: a.from, n });
  let done = a.from;
  let committed = done;
  const end = a.range ? () => a.range!.end() : () => a.item.units;
  // A range hands a unit out before it is processed: drain and abort are checked before asking for one.
  const take = a.range ? () => a.range!.next() : () => Promise.resolve(done + 1);
  const commit = async (): Promise<boolean> => {
    const s = Date.now();
    const u = done;
    const ok = await a.commit(u).catch(() => false);
    emit(cfg, { ev: 'commit', id, ...p, u, ok, n, s });
    if (ok) committed = Math.max(committed, u);
    return ok;
  };
  /** A report that does not wait (`--progress behind`): a refusal is seen at the next report. */
  let refused = false;
  let reported = done;
  const report = (): boolean => {
    if (refused) return false;
    reported = done;
    if (a.advance) a.advance(done);
    else void commit().then((ok) => { if (!ok) refused = true; });
    return true;
  };
  while (done < end()) {
    if (a.signal?.aborted) {
      emit(cfg, { ev: 'abort', id, ...p, n });
      return { status: 'aborted', n, units: done };
    }
    if (a.drain?.aborted) {
      if (done > committed && !(await commit())) return { status: 'aborted', n, units: done };
      return { status: 'drained', n, units: done };
    }
    const u = await take();
    // The part ended where it is (a division landed at the position), or the split was lost meanwhile (the top of the loop says so).
    if (u === undefined) {
      if (a.signal?.aborted) continue;
      break;
    }
    await sleep(cfg.unitMs, a.signal);
    if (a.signal?.aborted) continue;
    done = u;
    emit(cfg, { ev: 'unit', id, ...p, u: done, n });
    if (PROGRESS === 'behind') {
      if (done - reported >= cfg.commitEvery && done < end() && !report()) {
        emit(cfg, { ev: 'abort', id, ...p, n });
        return { status: 'aborted', n, units: done };
      }
    } else if (done - committed >= cfg.commitEvery && done < end() && !(await commit())) {
      emit(cfg, { ev: 'abort', id, ...p, n });
      return { status: 'aborted', n, units: done };
    }
  }
  return { status: 'done', n, units: done };
}
