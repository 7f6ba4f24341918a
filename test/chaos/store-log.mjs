/**
 * The chaos suite's store-call log: every `txn`, `get` and `list` a process
 * makes through an `EtcdStore` is written as JSON lines to a file, each call
 * twice: `invoke` (before it is sent: the request) and then `ok` (the
 * answer) or `fail` (the error's code). A process killed mid-call leaves an
 * `invoke` with no answer: an unknown outcome. The history checker
 * (test/support/history-check.ts) holds these calls to etcd's recorded
 * history.
 *
 * Two uses, one implementation: `instrument(store, path)` patches one store
 * object in the test process (the scenarios' operator connection); loaded
 * with `node --import <this file>` into a fleet member (runner.ts) with
 * SPLITFLEET_CHAOS_STORE_LOG (the file) and SPLITFLEET_CHAOS_STORE_MODULE
 * (the member's compiled src/store/etcd/etcd.js), it patches `EtcdStore.prototype`
 * before the member starts.
 *
 * Invariants: lines are written synchronously (a SIGKILL loses no line
 * already answered); times are real wall-clock ms taken from the monotonic
 * clock (`performance.timeOrigin + performance.now()`, less the clock
 * shim's step at start), so a member whose wall clock is stepped (the
 * clock-steps scenario) still logs times the checker can compare with the
 * recorder's; the patched calls return exactly
 * what the store returned. Plain JavaScript: it runs in the member process,
 * which loads only compiled code.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * The process's start in real wall-clock ms: `performance.timeOrigin` was read from the wall clock,
 * which the clock shim may have stepped (SPLITFLEET_CHAOS_CLOCK_FILE holds that step): undo it.
 */
function realOrigin() {
  const file = process.env.SPLITFLEET_CHAOS_CLOCK_FILE;
  let step = 0;
  if (file) {
    try {
      step = Number.parseInt(readFileSync(file, 'utf8'), 10) || 0;
    } catch {
      step = 0;
    }
  }
  return performance.timeOrigin - step;
}
const origin = realOrigin();
const realNow = () => Math.round(origin + performance.now());
let seq = 0;

/**
 * Patches `target`'s txn, get and list (an `EtcdStore` instance, or its
 * prototype) to log to `path`. Returns a function that closes the file.
 * @param {any} target
 * @param {string} path
 * @param {string} process_ a name for the calling process in every line
 */
export function instrument(target, path, process_) {
  const fd = openSync(path, 'a');
  const line = (o) => writeSync(fd, `${JSON.stringify({ p: process_, ...o })}\n`);
  const wrap = (name, describe, answer) => {
    const original = target[name];
    target[name] = function (...args) {
      const i = ++seq;
      line({ i, k: 'invoke', t: realNow(), call: name, ...describe(...args) });
      let result;
      try {
        result = original.apply(this, args);
      } catch (e) {
        line({ i, k: 'fail', t: realNow(), code: e?.code ?? 'THROWN', message: String(e?.message ?? e).slice(0, 300) });
        throw e;
      }
      return Promise.resolve(result).then(
        (r) => {
          line({ i, k: 'ok', t: realNow(), ...answer(r) });
          return r;
        },
        (e) => {
          line({ i, k: 'fail', t: realNow(), code: e?.code ?? 'THROWN', message: String(e?.message ?? e).slice(0, 300) });
          throw e;
        },
      );
    };
  };
  const kv = (x) => (x ? { key: x.key, value: x.value, modRevision: x.modRevision, createRevision: x.createRevision, ...(x.lease ? { lease: x.lease } : {}) } : null);
  wrap('txn', (txn) => ({ txn }), (r) => ({ won: r.won, revision: r.revision }));
  wrap('get', (key) => ({ key }), (r) => ({ kv: kv(r) }));
  wrap('list', (prefix, options) => ({ prefix, options: options ?? {} }), (r) => ({ revision: r.revision, more: r.more, kvs: r.kvs.map(kv) }));
  return () => closeSync(fd);
}

const logPath = process.env.SPLITFLEET_CHAOS_STORE_LOG;
const storeModule = process.env.SPLITFLEET_CHAOS_STORE_MODULE;
if (logPath && storeModule) {
  const { EtcdStore } = await import(pathToFileURL(storeModule).href);
  instrument(EtcdStore.prototype, logPath, `${process.env.SPLITFLEET_CHAOS_INSTANCE ?? 'member'}/${process.pid}`);
}
