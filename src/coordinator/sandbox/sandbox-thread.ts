/**
 * The sandbox thread's entry (sandboxedHandler runs the compiled
 * dist/src/coordinator/sandbox/sandbox-thread.js on Piscina): imports the user's
 * handler module, and runs its handler on one split with a thread-side
 * SplitHandle whose writes are calls over the split's MessagePort to the
 * real handle on the main thread.
 *
 * Invariants: nothing is thrown across the boundary (a failure is a
 * `{ ok: false, stage, error }` reply). The task does not settle while a call
 * of its handle is unanswered, so every write the handler made has reached
 * the real handle before the main side hears the handler has returned (the
 * lane's release after a normal return is ordered after them, as in-thread).
 * It imports the wire (sandbox-wire.ts), never sandbox.ts, and not piscina.
 */
import type { MessagePort } from 'node:worker_threads';
import { SplitfleetError } from '../../errors.js';
import type { Json } from '../../protocol/records.js';
import {
  FLAG_ABORTED, FLAG_DRAINING, HEARTBEAT_FORWARD_MS, fromWire, toWire,
  type CallMessage, type DivideOutcome, type DivideRequestMessage, type HandleMethod, type MainMessage, type SandboxReply, type SandboxTask, type SplitTask,
} from './sandbox-wire.js';
import type { CommitOptions, DivideCallback, DivisionRequest, FailOptions, SplitHandle, SplitHandler } from '../types.js';

/** Imports `module` (the loader caches it per thread) and returns its `exportName` export, which must be a function. */
async function load(module: string, exportName: string): Promise<SplitHandler> {
  const mod = (await import(module)) as Record<string, unknown>;
  const fn = mod[exportName];
  if (typeof fn !== 'function') {
    const names = Object.keys(mod);
    throw new Error(
      `module ${module} has no export "${exportName}" that is a function ` +
        `(${fn === undefined ? 'no such export' : `it is ${typeof fn}`}; its exports: ${names.length ? names.join(', ') : 'none'})`,
    );
  }
  return fn as SplitHandler;
}

/** Runs one task; never throws. */
export default async function run(task: SandboxTask): Promise<SandboxReply> {
  let handler: SplitHandler;
  try {
    handler = await load(task.module, task.exportName);
  } catch (e) {
    if (task.kind === 'split') task.port.close();
    return { ok: false, stage: 'load', error: toWire(e) };
  }
  if (task.kind === 'probe') return { ok: true };
  const { handle, settle } = threadHandle(task);
  try {
    await handler(handle);
    return { ok: true };
  } catch (e) {
    return { ok: false, stage: 'handler', error: toWire(e) };
  } finally {
    await settle();
  }
}

/**
 * The thread-side SplitHandle of `task`, and `settle()`: waits for every call it made, then closes the port.
 *
 * Why one function: the handle's methods are closures over one port, one pending set and one
 * drain flag; spread over functions, each would need all three passed in.
 */
function threadHandle(task: SplitTask): { handle: SplitHandle; settle: () => Promise<void> } {
  const port: MessagePort = task.port;
  const flags = new Int32Array(task.flags);
  const abort = new AbortController();
  const drain = new AbortController();
  const pending = new Map<number, { resolve: (value?: DivideOutcome) => void; reject: (e: Error) => void }>();
  let divider: DivideCallback | undefined;
  // The part's end and weight as the last landed division left them (decision 0063).
  let end: Json | undefined = task.split.end;
  let weight = task.split.weight;
  const calls = new Set<Promise<void>>();
  let seq = 0;
  let abortReason: Error | undefined;
  const id = task.split.id;

  // The flags are read whenever the handler reads a signal from the handle, so a loop that never
  // yields (and so never receives the port's messages) still sees a drain or an abort.
  const sync = (): void => {
    if (!drain.signal.aborted && Atomics.load(flags, FLAG_DRAINING) === 1) drain.abort();
    if (!abort.signal.aborted && Atomics.load(flags, FLAG_ABORTED) === 1) {
      abort.abort(abortReason ?? new SplitfleetError('LEASE_LOST', `split ${id}: this lane no longer holds the split`));
    }
  };

  port.on('message', (m: MainMessage) => {
    switch (m.type) {
      case 'reply': {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (m.ok) p?.resolve(m.value);
        else p?.reject(fromWire(m.error));
        break;
      }
      case 'divide-request':
        void answer(m);
        break;
      case 'drain':
        sync();
        break;
      case 'abort':
        abortReason = fromWire(m.reason);
        sync();
        break;
    }
  });

  const call = (method: HandleMethod, args: unknown[]): Promise<DivideOutcome | undefined> => {
    const n = ++seq;
    const p = new Promise<DivideOutcome | undefined>((resolve, reject) => {
      pending.set(n, { resolve, reject });
      const msg: CallMessage = { type: 'call', id: n, method, args };
      try {
        port.postMessage(msg); // throws DataCloneError for progress that cannot be cloned
      } catch (e) {
        pending.delete(n);
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
    const tracked = p.then(() => undefined, () => undefined);
    calls.add(tracked);
    void tracked.then(() => calls.delete(tracked));
    return p;
  };

  // Heartbeats are forwarded on the leading edge, then at most one per HEARTBEAT_FORWARD_MS (a trailing
  // one carries the latest details, once the handler yields): a handler that beats per record stays cheap.
  let lastBeat = -Infinity;
  let beatTimer: NodeJS.Timeout | undefined;
  let beatDetails: Json | undefined;
  const sendBeat = (): void => {
    clearTimeout(beatTimer);
    beatTimer = undefined;
    lastBeat = performance.now();
    const details = beatDetails;
    beatDetails = undefined;
    void call('heartbeat', details === undefined ? [] : [details]).catch(() => undefined);
  };

  // A division request from the main side: the handler's callback, then `undivided` if it did not divide.
  const answer = async (m: DivideRequestMessage): Promise<void> => {
    let proposed = false;
    const request: DivisionRequest = {
      seq: m.seq, share: m.share, weight: m.weight, progress: m.progress, end: m.end,
      divide: async (proposal) => {
        if (proposed) throw new SplitfleetError('INVALID_INPUT', `split ${id}: divide() may be called once per request`);
        proposed = true;
        const out = (await call('divide', [m.request, proposal]))!;
        if (out.landed) {
          end = out.end;
          weight = out.weight;
        }
        return out.landed;
      },
    };
    try {
      if (divider) await divider(request);
    } catch {
      // A callback that throws declines (the main side logs nothing of the thread's: its own declines).
    }
    if (!proposed) await call('undivided', [m.request]).catch(() => undefined);
  };

  const { split } = task;
  const handle: SplitHandle = {
    id: split.id,
    get weight() {
      return weight;
    },
    get end() {
      return end;
    },
    descriptor: split.descriptor,
    progress: split.progress,
    epoch: split.epoch,
    attempts: split.attempts,
    get signal() {
      sync();
      return abort.signal;
    },
    get drainSignal() {
      sync();
      return drain.signal;
    },
    commit: async (progress: Json, options?: CommitOptions) => {
      await call('commit', options === undefined ? [progress] : [progress, options]);
    },
    // Forwarded, not awaited: the main side's lane commits it on its own timer.
    advance: (progress: Json, options?: CommitOptions) => {
      void call('advance', options === undefined ? [progress] : [progress, options]).catch(() => undefined);
    },
    complete: async (progress?: Json) => {
      await call('complete', [progress]);
    },
    // The options travel as data (a structured clone); the main side's real handle validates them.
    fail: async (reason: string, options?: FailOptions) => {
      await call('fail', options === undefined ? [String(reason)] : [String(reason), options]);
    },
    release: async (progress?: Json) => {
      await call('release', [progress]);
    },
    onDivide: (callback) => {
      const first = divider === undefined;
      divider = callback as DivideCallback;
      if (first) void call('onDivide', []).catch(() => undefined);
    },
    decline: () => {
      void call('decline', []).catch(() => undefined);
    },
    heartbeat: (details?: Json) => {
      sync();
      if (abort.signal.aborted) return;
      if (details !== undefined) beatDetails = details;
      const wait = lastBeat + HEARTBEAT_FORWARD_MS - performance.now();
      if (wait <= 0) sendBeat();
      else beatTimer ??= setTimeout(sendBeat, wait);
    },
  };
  sync();

  const settle = async (): Promise<void> => {
    clearTimeout(beatTimer); // the handler has returned: a trailing heartbeat says nothing more
    while (calls.size > 0) await Promise.all([...calls]);
    port.close();
  };
  return { handle, settle };
}
