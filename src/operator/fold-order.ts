/**
 * A packed job's `result.{generation}.{seq}` records (decision 0069) in fold
 * order: by generation, then seq, numerically, for `readFinalProgress`. The
 * keys carry unpadded decimals, so key order is not fold order
 * (`result.10.0` sorts before `result.2.0`); this walk reads them in fold
 * order without listing the whole range.
 *
 * How: a canonical decimal of `d` digits sorts, among numbers of `d` digits,
 * as its value does. So the walk takes the lengths one at a time, 1 to 10
 * digits, and lists from the smallest candidate of the current length; a key
 * of another length (or no result key at all) sends it to the next candidate
 * of the current length past that key ({@link nextOfLength}), so it never
 * reads a key's range twice in one length. Generations are found the same way,
 * one listing per generation.
 *
 * Invariants:
 * - Yields only canonical result keys of the job (parseKey's), each once, in
 *   (generation, seq) numeric order, from the given fold on (inclusive).
 * - Lazy: it reads only as far as its caller pulls, at most
 *   RESULT_RECORDS_PER_READ records a read (2 right after a jump, where the
 *   keys that follow are most likely of another length).
 * - Read-only.
 */
import { kindPrefix, MAX_FOLD_NUMBER, parseKey } from '../protocol/keys.js';
import { inJobScope } from '../protocol/scope.js';
import type { KeyValue, Store } from '../store/store.js';

/** Result records listed per read: each can be near a store request's size. */
export const RESULT_RECORDS_PER_READ = 8;
/** Records listed right after a jump: the next key is most often of another length. */
const AFTER_JUMP = 2;
const MAX_DIGITS = String(MAX_FOLD_NUMBER).length;

/** One fold-back's numbers: its leader's generation and its count in that term. */
export interface Fold {
  readonly generation: number;
  readonly seq: number;
}

/**
 * The smallest number of `d` digits whose decimal sorts after every key text starting with `rest`
 * (a key's text after the walk's base, itself at or after the current candidate), or undefined
 * when no number of `d` digits is left. Pure.
 */
export function nextOfLength(rest: string, d: number): number | undefined {
  const digits = /^[0-9]*/.exec(rest)![0];
  if (digits === '') return undefined; // past the digits (the listing's range ends at ':')
  let n: number;
  if (digits.length >= d) {
    n = Number(digits.slice(0, d)) + 1; // every d-digit number ≤ its first d digits sorts before `rest`
  } else {
    const ch = rest.charAt(digits.length);
    // A shorter number: padded with zeros it sorts after `rest` when what follows it sorts below '0'.
    const head = ch === '' || ch < '0' ? Number(digits) : Number(digits) + 1;
    if (String(head).length > digits.length) return undefined;
    n = head * 10 ** (d - digits.length);
  }
  return String(n).length === d ? n : undefined;
}

/**
 * The numbers at one level under `base` (`result.` for generations, `result.{g}.` for seqs), in
 * numeric order from `from` on: a hit is a key whose text after `base` is the number alone (seq)
 * or the number and a '.' (generation). Yields each number with its key (the first one seen).
 */
async function* numbersUnder(store: Store, prefix: string, base: string, from: number, level: 'generation' | 'seq'): AsyncGenerator<{ n: number; kv: KeyValue }> {
  const rangeEnd = `${base}:`; // ':' follows '9': only texts starting with a digit
  for (let d = String(from).length, start: number | undefined = from; d <= MAX_DIGITS; d++, start = 10 ** (d - 1)) {
    let startAfter: string | undefined;
    let limit = level === 'generation' ? 1 : RESULT_RECORDS_PER_READ;
    while (start !== undefined) {
      const page = await store.list(prefix, { rangeStart: `${base}${start}`, rangeEnd, limit, ...(startAfter !== undefined ? { startAfter } : {}) });
      let jump: number | undefined | 'none' = 'none';
      for (const kv of page.kvs) {
        const rest = kv.key.slice(base.length);
        const digits = /^[0-9]*/.exec(rest)![0];
        // A generation is any key under `result.{g}.` (its seq walk keeps the result keys only).
        const hit = digits.length === d && (level === 'seq' ? rest === digits && isResult(prefix, kv.key) : rest.charAt(d) === '.');
        if (hit) {
          yield { n: Number(digits), kv };
          if (level === 'seq') continue; // the next key of this length may follow at once
        } else if (level === 'generation' && digits.length === d && rest.charAt(d) < '.') {
          continue; // `result.{g}` or `result.{g}-…` (junk): generation g's keys, `result.{g}.…`, may still follow
        }
        jump = nextOfLength(rest, d);
        break;
      }
      if (jump !== 'none') {
        start = jump;
        startAfter = undefined;
        limit = level === 'generation' ? 1 : AFTER_JUMP;
      } else if (page.kvs.length === 0 || !page.more) {
        start = undefined;
      } else {
        startAfter = page.kvs[page.kvs.length - 1]!.key;
        limit = level === 'generation' ? 1 : RESULT_RECORDS_PER_READ;
      }
    }
  }
}

/** A result key of the job itself (never a nested job's, never a key in no canonical form). */
function isResult(prefix: string, key: string): boolean {
  return parseKey(prefix, key).kind === 'result' && inJobScope(prefix, key);
}

/** The job's result records from fold `from` on (inclusive), in fold order, each with its fold. */
export async function* resultsInFoldOrder(store: Store, prefix: string, from: Fold | undefined): AsyncGenerator<{ fold: Fold; kv: KeyValue }> {
  const base = kindPrefix(prefix, 'result');
  for await (const { n: generation } of numbersUnder(store, prefix, base, from?.generation ?? 0, 'generation')) {
    const first = from !== undefined && generation === from.generation ? from.seq : 0;
    for await (const { n: seq, kv } of numbersUnder(store, prefix, `${base}${generation}.`, first, 'seq')) {
      yield { fold: { generation, seq }, kv };
    }
  }
}
