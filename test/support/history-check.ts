/**
 * Check: the store calls the processes logged agree with etcd's recorded
 * history (a per-key register with compare-and-swap, in the spirit of
 * Jepsen's Elle and porcupine, but with etcd's own revision order as the
 * witness, so no search is needed). The history is the one recorder's
 * (history.ts): every put and delete under the job's prefix, in revision
 * order, from revision 1. The calls are the chaos members' and the operator's
 * (test/chaos/store-log.mjs): each `txn`, `get` and `list` with its outcome:
 * `ok` (the answer), `failed` (a definite refusal: nothing was applied) or
 * `unknown` (a timeout, a lost connection, a process killed mid-call).
 *
 * The rules, each a violation `check`:
 * - `ack-lost`: a transaction answered `won` (or lost, with a writing failure
 *   branch) at revision R: exactly its writes under the prefix are the
 *   history's events at R (a delete of a missing key writes nothing);
 * - `ack-compare`: its compares held before R (won), or did not (lost);
 * - `read-unknown-version` / `read-stale` / `read-incomplete`: a read returns
 *   versions that are in the history, none older than a write recorded before
 *   the read was sent, and (a whole listing) every key live at its revision;
 * - `failed-landed`: a call answered with a definite failure is not in the
 *   history;
 * - `landed-twice`: a write lands at most once per call (an unknown outcome
 *   is absent or landed once; an acknowledged one landed at its revision
 *   only);
 * - `unexplained-write`: every revision under the prefix is some logged
 *   call's, or deletes only keys held by a lease (expiry or revocation).
 * A call is matched to a revision only if its compares held just before that
 * revision and it was sent before the recorder received that revision.
 * Compares and writes on keys outside the prefix are not judged (the
 * history does not hold them). Pure: no I/O, no clock.
 */
import { compareKeys, type Compare, type KeyValue, type ListOptions, type Op, type Txn } from '../../src/store/store.js';
import type { HistoryEvent } from './history.js';

/** Codes a store call fails with when nothing was applied (refused before sending, or by etcd before applying). */
export const DEFINITE_FAILURES: ReadonlySet<string> = new Set(['CLOSED', 'RECORD_TOO_LARGE', 'INVALID_INPUT', 'INVALID_CONFIG', 'STORE_FULL', 'LEASE_LOST']);

export type CallOutcome =
  | { kind: 'ok'; at: number; won?: boolean; revision?: number; kv?: KeyValue | null; kvs?: KeyValue[]; more?: boolean }
  | { kind: 'failed'; at: number; code: string }
  | { kind: 'unknown'; at?: number; code?: string };

/** One logged store call. Times are real wall-clock ms, comparable with the recorder's `at`. */
export interface StoreCall {
  process: string;
  id: number;
  call: 'txn' | 'get' | 'list';
  invokedAt: number;
  txn?: Txn;
  key?: string;
  prefix?: string;
  options?: ListOptions;
  outcome: CallOutcome;
}

export interface HistoryViolation {
  check: string;
  detail: string;
  revisions?: number[];
  call?: string;
}

export interface HistoryCheckFigures {
  calls: number;
  writes: number;
  acknowledged: number;
  unknown: number;
  unknownLanded: number;
  failed: number;
  reads: number;
  revisions: number;
  leaseDeletes: number;
}

export interface HistoryCheckReport {
  violations: HistoryViolation[];
  figures: HistoryCheckFigures;
}

interface Version { rev: number; type: 'put' | 'delete'; value: string | undefined; lease: string; createRevision: number; at: number }

const leaseOf = (l: string | undefined): string => (l === undefined || l === '' ? '0' : l);
const name = (c: StoreCall): string => `${c.process}#${c.id} ${c.call}`;

/** The history as per-key versions, with each put's create revision. */
class Register {
  readonly versions = new Map<string, Version[]>();
  readonly byRev = new Map<number, HistoryEvent[]>();

  constructor(history: readonly HistoryEvent[]) {
    const sorted = [...history].sort((a, b) => a.rev - b.rev);
    for (const e of sorted) {
      const vs = this.versions.get(e.key) ?? [];
      const prev = vs[vs.length - 1];
      const createRevision = e.type === 'put' ? (prev?.type === 'put' ? prev.createRevision : e.rev) : 0;
      vs.push({ rev: e.rev, type: e.type, value: e.type === 'put' ? e.value ?? JSON.stringify(e.rec) : undefined, lease: leaseOf(e.lease), createRevision, at: e.at });
      this.versions.set(e.key, vs);
      const at = this.byRev.get(e.rev) ?? [];
      at.push(e);
      this.byRev.set(e.rev, at);
    }
  }

  /** The key's last version at or before `rev` (undefined: never written by then). */
  at(key: string, rev: number): Version | undefined {
    const vs = this.versions.get(key);
    if (!vs) return undefined;
    let lo = 0;
    let hi = vs.length - 1;
    let found: Version | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (vs[mid]!.rev <= rev) {
        found = vs[mid];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  live(key: string, rev: number): Version | undefined {
    const v = this.at(key, rev);
    return v?.type === 'put' ? v : undefined;
  }
}

function holds(c: Compare, reg: Register, rev: number): boolean {
  const v = reg.live(c.key, rev);
  switch (c.target) {
    case 'absent': return v === undefined;
    case 'modRevision': return (v?.rev ?? 0) === c.equals;
    case 'value': return v !== undefined && v.value === c.equals;
    case 'lease': return (v?.lease ?? '0') === c.equals;
  }
}

/**
 * What a branch writes under `prefix` when applied just after `rev - 1`: each
 * put, and each delete of a key live then (a delete of a missing key writes
 * nothing). Sorted by key, as a comparable signature.
 */
function effect(ops: readonly Op[], prefix: string, reg: Register, rev: number): string[] {
  const out: string[] = [];
  for (const o of ops) {
    if (!o.key.startsWith(prefix)) continue;
    if (o.op === 'put') out.push(`put ${o.key} ${leaseOf(o.lease)} ${o.value}`);
    else if (o.op === 'delete' && reg.live(o.key, rev - 1)) out.push(`delete ${o.key}`);
  }
  return out.sort();
}

function eventsAt(reg: Register, rev: number): string[] {
  return (reg.byRev.get(rev) ?? []).map((e) => (e.type === 'put'
    ? `put ${e.key} ${leaseOf(e.lease)} ${e.value ?? JSON.stringify(e.rec)}` : `delete ${e.key}`)).sort();
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const comparesJudged = (t: Txn, prefix: string) => t.compares.every((c) => c.key.startsWith(prefix));
const writes = (ops: readonly Op[] | undefined, prefix: string) => (ops ?? []).some((o) => o.op !== 'get' && o.key.startsWith(prefix));

export interface HistoryCheckOptions {
  /** The job's key prefix (`<root>/<job>/`): what the history holds. */
  prefix: string;
  /** Clock tolerance between processes, ms (default 5). */
  slackMs?: number;
}

/** Holds `calls` to `history`; see the file's header for the rules. */
export function checkHistory(history: readonly HistoryEvent[], calls: readonly StoreCall[], options: HistoryCheckOptions): HistoryCheckReport {
  const { prefix } = options;
  const slack = options.slackMs ?? 5;
  const reg = new Register(history.filter((e) => e.key.startsWith(prefix)));
  const violations: HistoryViolation[] = [];
  const v = (x: HistoryViolation) => {
    if (violations.length < 200) violations.push(x);
  };
  const figures: HistoryCheckFigures = {
    calls: calls.length, writes: 0, acknowledged: 0, unknown: 0, unknownLanded: 0, failed: 0, reads: 0, revisions: reg.byRev.size, leaseDeletes: 0,
  };
  const claimed = new Map<number, StoreCall>();
  const landedAt = new Map<StoreCall, number>();

  // 1. Acknowledged transactions: their writes are the history's at their revision, their compares judged there.
  for (const c of calls) {
    if (c.call !== 'txn' || !c.txn) continue;
    const t = c.txn;
    const o = c.outcome;
    const writing = writes(t.success, prefix) || writes(t.failure, prefix);
    if (writing) figures.writes++;
    if (o.kind === 'failed') figures.failed += writing ? 1 : 0;
    if (o.kind === 'unknown') figures.unknown += writing ? 1 : 0;
    if (o.kind !== 'ok' || o.revision === undefined) continue;
    const R = o.revision;
    const branch = o.won ? t.success : t.failure ?? [];
    const want = effect(branch, prefix, reg, R);
    if (writing) figures.acknowledged++;
    if (want.length > 0) {
      const got = eventsAt(reg, R);
      if (!same(want, got)) {
        v({ check: 'ack-lost', call: name(c), revisions: [R], detail: `${name(c)} was told it ${o.won ? 'won' : 'lost'} at revision ${R}; its writes ${JSON.stringify(want)} are not what the history holds there: ${JSON.stringify(got)}` });
      } else {
        claimed.set(R, c);
        landedAt.set(c, R);
      }
    }
    if (comparesJudged(t, prefix)) {
      // A write is judged against the state just before it; a read-only answer against the state it read.
      const before = want.length > 0 ? R - 1 : R;
      const held = t.compares.every((x) => holds(x, reg, before));
      if (held !== o.won) {
        v({ check: 'ack-compare', call: name(c), revisions: [R], detail: `${name(c)} was told it ${o.won ? 'won' : 'lost'} at revision ${R}, but its compares ${held ? 'held' : 'did not hold'} at revision ${before}: ${JSON.stringify(t.compares)}` });
      }
    }
  }

  // 2. Reads: real versions, none staler than a write recorded before the read was sent.
  for (const c of calls) {
    if (c.outcome.kind !== 'ok') continue;
    if (c.call === 'get' && c.key?.startsWith(prefix)) {
      figures.reads++;
      checkRead(c, c.key, c.outcome.kv ?? undefined, undefined);
    } else if (c.call === 'list' && c.outcome.kvs) {
      figures.reads++;
      checkList(c);
    }
  }

  // 3. Every other revision: one unknown call's landing, or a lease's deletions.
  const pending = calls.filter((c) => c.call === 'txn' && c.txn && c.outcome.kind !== 'ok' && (writes(c.txn.success, prefix) || writes(c.txn.failure, prefix)))
    .sort((a, b) => a.invokedAt - b.invokedAt);
  for (const R of [...reg.byRev.keys()].sort((a, b) => a - b)) {
    if (claimed.has(R)) continue;
    const events = reg.byRev.get(R)!;
    const at = Math.min(...events.map((e) => e.at));
    if (events.every((e) => e.type === 'delete' && reg.live(e.key, R - 1)?.lease !== '0')) {
      figures.leaseDeletes++;
      continue;
    }
    const got = eventsAt(reg, R);
    const matches = (c: StoreCall) => {
      const t = c.txn!;
      if (c.invokedAt > at + slack) return false;
      const held = t.compares.every((x) => holds(x, reg, R - 1));
      if (!comparesJudged(t, prefix) && !held) {
        // Compares on keys the history does not hold: either branch may have run.
        return same(effect(t.success, prefix, reg, R), got) || same(effect(t.failure ?? [], prefix, reg, R), got);
      }
      return same(effect(held ? t.success : t.failure ?? [], prefix, reg, R), got);
    };
    const free = pending.filter((c) => !landedAt.has(c) && matches(c));
    const unknown = free.find((c) => c.outcome.kind === 'unknown');
    if (unknown) {
      landedAt.set(unknown, R);
      claimed.set(R, unknown);
      figures.unknownLanded++;
      continue;
    }
    const failed = free.find((c) => c.outcome.kind === 'failed');
    if (failed) {
      landedAt.set(failed, R);
      claimed.set(R, failed);
      v({ check: 'failed-landed', call: name(failed), revisions: [R], detail: `${name(failed)} failed with ${(failed.outcome as { code: string }).code} (nothing applied), yet its writes are the history's at revision ${R}: ${JSON.stringify(got)}` });
      continue;
    }
    const again = [...landedAt].find(([c, r]) => r !== R && c.txn && c.invokedAt <= at + slack && (same(effect(c.txn.success, prefix, reg, R), got) || same(effect(c.txn.failure ?? [], prefix, reg, R), got)));
    if (again) {
      v({ check: 'landed-twice', call: name(again[0]), revisions: [again[1], R], detail: `${name(again[0])} (${again[0].outcome.kind}) landed at revision ${again[1]} and its writes landed again at revision ${R}: ${JSON.stringify(got)}` });
    } else {
      v({ check: 'unexplained-write', revisions: [R], detail: `revision ${R} matches no logged call whose compares held before it: ${JSON.stringify(got).slice(0, 600)}` });
    }
  }
  return { violations, figures };

  function checkRead(c: StoreCall, key: string, kv: KeyValue | undefined, listRevision: number | undefined): void {
    if (kv) {
      const ver = reg.at(key, kv.modRevision);
      if (!ver || ver.rev !== kv.modRevision || ver.type !== 'put' || ver.value !== kv.value || ver.createRevision !== kv.createRevision) {
        v({ check: 'read-unknown-version', call: name(c), revisions: [kv.modRevision], detail: `${name(c)} read ${key} at modRevision ${kv.modRevision} (created ${kv.createRevision}), which the history does not hold: ${JSON.stringify(ver ?? null)}` });
        return;
      }
    }
    if (listRevision !== undefined) {
      const now = reg.live(key, listRevision);
      if (kv && now?.rev !== kv.modRevision) {
        v({ check: 'read-stale', call: name(c), revisions: [kv.modRevision, listRevision], detail: `${name(c)} listed ${key} at modRevision ${kv.modRevision} in a listing at revision ${listRevision}, where the history has ${now ? `revision ${now.rev}` : 'no such key'}` });
      }
      if (c.options?.revision !== undefined) return; // a past read: judged at its revision only
    }
    // The key's last write the recorder had received before the read was sent: the read is no older.
    const vs = reg.versions.get(key) ?? [];
    let before: Version | undefined;
    for (const x of vs) if (x.at < c.invokedAt - slack) before = x;
    if (!before) return;
    const fresh = kv ? kv.modRevision >= before.rev || (before.type === 'delete' && kv.modRevision > before.rev)
      : before.type === 'delete' || vs.some((x) => x.type === 'delete' && x.rev > before!.rev);
    if (!fresh) {
      v({ check: 'read-stale', call: name(c), revisions: [before.rev], detail: `${name(c)} read ${key} as ${kv ? `modRevision ${kv.modRevision}` : 'missing'}, older than its ${before.type} at revision ${before.rev}, recorded before the read was sent` });
    }
  }

  function checkList(c: StoreCall): void {
    const o = c.outcome as Extract<CallOutcome, { kind: 'ok' }>;
    const P = o.revision!;
    const lp = c.prefix ?? '';
    const opts = c.options ?? {};
    for (const kv of o.kvs!) if (kv.key.startsWith(prefix)) checkRead(c, kv.key, kv, P);
    // A whole listing (no more pages) holds every key live at its revision within its range.
    if (o.more !== false) return;
    const seen = new Set(o.kvs!.map((k) => k.key));
    for (const key of reg.versions.keys()) {
      if (!key.startsWith(lp) || seen.has(key)) continue;
      if (opts.startAfter !== undefined && compareKeys(key, opts.startAfter) <= 0) continue;
      if (opts.rangeStart !== undefined && compareKeys(key, opts.rangeStart) < 0) continue;
      if (opts.rangeEnd !== undefined && compareKeys(key, opts.rangeEnd) >= 0) continue;
      const live = reg.live(key, P);
      if (live) v({ check: 'read-incomplete', call: name(c), revisions: [P, live.rev], detail: `${name(c)} listed ${lp} at revision ${P} without ${key}, live there since revision ${live.rev}` });
    }
  }
}

/**
 * Parses store-log lines (test/chaos/store-log.mjs) into calls: an `invoke`
 * with no answer, or one that failed with a code not in `DEFINITE_FAILURES`,
 * is an unknown outcome.
 */
export function parseStoreLog(lines: readonly string[]): StoreCall[] {
  const calls = new Map<string, StoreCall>();
  for (const text of lines) {
    if (!text.trim()) continue;
    let l: Record<string, any>;
    try {
      l = JSON.parse(text) as Record<string, any>;
    } catch {
      continue; // a line cut short by a SIGKILL: its call stays unanswered, hence unknown
    }
    const id = `${l.p}#${l.i}`;
    if (l.k === 'invoke') {
      calls.set(id, { process: String(l.p), id: Number(l.i), call: l.call, invokedAt: Number(l.t), txn: l.txn, key: l.key, prefix: l.prefix, options: l.options, outcome: { kind: 'unknown' } });
      continue;
    }
    const c = calls.get(id);
    if (!c) continue;
    if (l.k === 'ok') c.outcome = { kind: 'ok', at: Number(l.t), won: l.won, revision: l.revision, kv: l.kv, kvs: l.kvs, more: l.more };
    else if (l.k === 'fail') c.outcome = DEFINITE_FAILURES.has(String(l.code)) ? { kind: 'failed', at: Number(l.t), code: String(l.code) } : { kind: 'unknown', at: Number(l.t), code: String(l.code) };
  }
  return [...calls.values()];
}
