/**
 * The store-call history checker (test/support/history-check.ts) on
 * hand-made histories and call logs: a clean run passes, and each rule is
 * shown failing on a history built to break it (an acknowledged write lost,
 * an unknown outcome landed twice, a definite failure that landed, a write no
 * call made, a stale read, a compare that did not hold), so a checker that
 * stopped seeing its events would be caught before a chaos run relied on it.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory, parseStoreLog, type StoreCall, type CallOutcome } from '../../support/history-check.js';
import type { HistoryEvent } from '../../support/history.js';
import { cmp, op, type Txn } from '../../../src/store/store.js';

const P = 'splitfleet/j/';
const K = `${P}split.a`;
const L = `${P}lease.a`;

/** A history event: the recorder received it at `at` (default: 10 ms per revision). */
const put = (rev: number, key: string, value: string, lease?: string, at = rev * 10): HistoryEvent =>
  ({ rev, type: 'put', key, kind: 'unknown', id: undefined, rec: undefined, value, lease, at });
const del = (rev: number, key: string, at = rev * 10): HistoryEvent =>
  ({ rev, type: 'delete', key, kind: 'unknown', id: undefined, rec: undefined, lease: undefined, at });

let seq = 0;
const txn = (t: Txn, outcome: CallOutcome, invokedAt = 0): StoreCall => ({ process: 'w0/1', id: ++seq, call: 'txn', invokedAt, txn: t, outcome });
const ok = (revision: number, won = true): CallOutcome => ({ kind: 'ok', at: revision * 10 + 1, won, revision });
const unknown: CallOutcome = { kind: 'unknown', code: 'TIMEOUT' };

/** A claim: split a goes from v1 (rev 1) to v2, with its lease key. */
const claim = (from: number): Txn => ({ compares: [cmp.modRevision(K, from)], success: [op.put(K, 'v2'), op.put(L, 'w0', '7')] });

const checks = (history: HistoryEvent[], calls: StoreCall[]) => checkHistory(history, calls, { prefix: P }).violations.map((x) => x.check);

describe('checkHistory', () => {
  const seed = txn({ compares: [cmp.absent(K)], success: [op.put(K, 'v1')] }, ok(1));

  it('passes a clean run: acknowledged writes at their revisions, an unknown outcome landed once, a lease expiry, fresh reads', () => {
    const history = [put(1, K, 'v1'), put(2, K, 'v2'), put(2, L, 'w0', '7'), del(3, L)];
    const calls = [
      seed,
      txn(claim(1), unknown, 12), // timed out, landed at 2
      { process: 'w1/2', id: 1, call: 'get', invokedAt: 35, key: K, outcome: { kind: 'ok', at: 36, kv: { key: K, value: 'v2', modRevision: 2, createRevision: 1 } } } satisfies StoreCall,
      { process: 'w1/2', id: 2, call: 'list', invokedAt: 35, prefix: P, outcome: { kind: 'ok', at: 36, revision: 3, more: false, kvs: [{ key: K, value: 'v2', modRevision: 2, createRevision: 1 }] } } satisfies StoreCall,
    ];
    const r = checkHistory(history, calls, { prefix: P });
    expect(r.violations).toEqual([]);
    expect(r.figures).toMatchObject({ acknowledged: 1, unknown: 1, unknownLanded: 1, leaseDeletes: 1, reads: 2 });
  });

  it('passes an unknown outcome that never landed, and a lost compare answered at its revision', () => {
    const history = [put(1, K, 'v1'), put(2, K, 'v9')];
    const other = txn({ compares: [cmp.modRevision(K, 1)], success: [op.put(K, 'v9')] }, ok(2));
    expect(checks(history, [seed, other, txn(claim(1), unknown, 5), txn(claim(1), ok(2, false), 15)])).toEqual([]);
  });

  it('catches a lost acknowledged write', () => {
    // The claim was told it won at revision 2; the history has nothing there (etcd lost it, or the client lied).
    const history = [put(1, K, 'v1')];
    expect(checks(history, [seed, txn(claim(1), ok(2), 12)])).toEqual(['ack-lost']);
    // Half of it landed: a transaction is one revision or none.
    expect(checks([put(1, K, 'v1'), put(2, K, 'v2')], [seed, txn(claim(1), ok(2), 12)])).toContain('ack-lost');
  });

  it('catches an unknown outcome that landed twice', () => {
    // A blind put (no compares) retried under the hood: it lands at 2 and again at 3.
    const blind: Txn = { compares: [], success: [op.put(K, 'v2')] };
    const history = [put(1, K, 'v1'), put(2, K, 'v2'), put(3, K, 'v2')];
    expect(checks(history, [seed, txn(blind, unknown, 12)])).toEqual(['landed-twice']);
    // Two calls with the same writes may land twice, once each.
    expect(checks(history, [seed, txn(blind, unknown, 12), txn(blind, unknown, 14)])).toEqual([]);
    // An acknowledged call that also landed a second time.
    expect(checks(history, [seed, txn(blind, ok(2), 12)])).toEqual(['landed-twice']);
  });

  it('catches a definite failure that landed, and a write no call made', () => {
    const history = [put(1, K, 'v1'), put(2, K, 'v2'), put(2, L, 'w0', '7')];
    expect(checks(history, [seed, txn(claim(1), { kind: 'failed', at: 15, code: 'LEASE_LOST' }, 12)])).toEqual(['failed-landed']);
    expect(checks(history, [seed])).toEqual(['unexplained-write']);
    // A call sent after the recorder had the revision cannot have made it.
    expect(checks(history, [seed, txn(claim(1), unknown, 40)])).toEqual(['unexplained-write']);
    // Nor can one whose compares did not hold just before it.
    expect(checks(history, [seed, txn(claim(0), unknown, 12)])).toEqual(['unexplained-write']);
  });

  it('catches an answer its compares contradict', () => {
    const history = [put(1, K, 'v1'), put(2, K, 'v2'), put(2, L, 'w0', '7')];
    // Told it lost at revision 1, although its compare (modRevision 1) held there.
    expect(checks([put(1, K, 'v1')], [seed, txn(claim(1), ok(1, false), 12)])).toEqual(['ack-compare']);
    // Told it won at 2 with a compare that did not hold at 1.
    expect(checks(history, [seed, txn(claim(5), ok(2), 12)])).toEqual(['ack-compare']);
  });

  it('catches stale and invented reads, and an incomplete listing', () => {
    const history = [put(1, K, 'v1'), put(2, K, 'v2'), put(2, L, 'w0', '7')];
    const calls = [seed, txn(claim(1), ok(2), 12)];
    const get = (invokedAt: number, kv: { value: string; modRevision: number } | null): StoreCall =>
      ({ process: 'w1/2', id: ++seq, call: 'get', invokedAt, key: K, outcome: { kind: 'ok', at: invokedAt + 1, kv: kv && { key: K, createRevision: 1, ...kv } } });
    expect(checks(history, [...calls, get(15, { value: 'v1', modRevision: 1 })])).toEqual([]); // concurrent with the claim: either
    expect(checks(history, [...calls, get(40, { value: 'v1', modRevision: 1 })])).toEqual(['read-stale']);
    expect(checks(history, [...calls, get(40, { value: 'v3', modRevision: 2 })])).toEqual(['read-unknown-version']);
    const list: StoreCall = { process: 'w1/2', id: ++seq, call: 'list', invokedAt: 40, prefix: P, outcome: { kind: 'ok', at: 41, revision: 2, more: false, kvs: [{ key: K, value: 'v2', modRevision: 2, createRevision: 1 }] } };
    expect(checks(history, [...calls, list])).toEqual(['read-incomplete']);
  });
});

describe('parseStoreLog', () => {
  it('reads answers, and counts an unanswered call, a cut line and a timeout as unknown', () => {
    const t = JSON.stringify(claim(1));
    const calls = parseStoreLog([
      `{"p":"w0/1","i":1,"k":"invoke","t":5,"call":"txn","txn":${t}}`,
      `{"p":"w0/1","i":1,"k":"ok","t":6,"won":true,"revision":2}`,
      `{"p":"w0/1","i":2,"k":"invoke","t":7,"call":"txn","txn":${t}}`,
      `{"p":"w0/1","i":3,"k":"invoke","t":8,"call":"txn","txn":${t}}`,
      `{"p":"w0/1","i":3,"k":"fail","t":9,"code":"TIMEOUT"}`,
      `{"p":"w0/1","i":4,"k":"invoke","t":8,"call":"txn","txn":${t}}`,
      `{"p":"w0/1","i":4,"k":"fail","t":9,"code":"LEASE_LOST"}`,
      `{"p":"w0/1","i":2,"k":"ok","t"`,
    ]);
    expect(calls.map((c) => c.outcome.kind)).toEqual(['ok', 'unknown', 'unknown', 'failed']);
  });
});
