/**
 * `sandboxedHandler`: a SplitHandler that runs the user's handler from a
 * module on Piscina threads, so a CPU-bound handler no longer holds the
 * event loop that renews the session lease (docs/decisions/0014-sandboxed-handlers.md).
 *
 * Per split, one Piscina task on its own thread (the pool has one thread per
 * lane when `threads` is the lane budget): the thread gets the handle's
 * fields copied, shared flags and a MessagePort. The drain and abort signals
 * go over both (flags for a handler that never yields, a message to wake one
 * that awaits); commit, complete, fail, release, decline and heartbeat come
 * back as calls that this side makes on the real handle and answers, errors
 * with their SplitfleetError code (a heartbeat timeout aborts `signal`, so
 * it terminates the thread like any abort).
 *
 * Invariants: lane semantics are unchanged: the returned handler returns
 * when the thread's handler returned, and throws an error with the same
 * message (and code, for a SplitfleetError) when it threw. When the real
 * handle's `signal` aborts (forced revocation, lost lease, stop without
 * drain), the task is aborted and Piscina terminates its thread, so a
 * spinning handler cannot keep running, and the handler returns (nothing
 * it would write lands). The exception is the lane ending by the
 * handler's own complete/fail/release: its thread is given `returnGraceMs`
 * to return. This file and assignment/pool.ts are the only importers of
 * piscina; no piscina type is exported.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { isSplitfleetError, SplitfleetError } from '../../errors.js';
import type { Json } from '../../protocol/records.js';
import { withThreadExecArgv } from '../../thread-argv.js';
import {
  FLAG_ABORTED, FLAG_DRAINING, FLAG_SLOTS, fromWire, toWire,
  type CallMessage, type DivideOutcome, type MainMessage, type SandboxReply, type SplitTask,
} from './sandbox-wire.js';
import type { CommitOptions, DivisionProposal, DivisionRequest, FailOptions, SplitHandle, SplitHandler } from '../types.js';

/** How `sandboxedHandler` runs the module: threads, which export, how long a finished handler may take to return. */
export interface SandboxOptions {
  /**
   * Threads, and so handlers running at once; give it the lane budget
   * (`maxInFlight`) for one thread per lane (a lane beyond it waits for a
   * thread). Default: `os.availableParallelism()`.
   */
  threads?: number;
  /** The module's export to call as the handler. Default 'default'. */
  exportName?: string;
  /**
   * After the handler's own complete, fail or release has landed, how long
   * its thread may take to return before it is terminated. Default 10 000 ms.
   */
  returnGraceMs?: number;
  /** The compiled thread entry. Default: sandbox-thread.js beside the compiled sandbox.js (dist/ when run from source). */
  threadFile?: string;
}

/** A SplitHandler running on threads; `close()` ends them. */
export interface SandboxedHandler extends SplitHandler {
  /** The handler module, as a URL. */
  readonly module: string;
  /** The export called as the handler. */
  readonly exportName: string;
  /** Threads in the pool: handlers that run at once. */
  readonly threads: number;
  /**
   * Imports the module on a thread and checks its export; rejects with
   * INVALID_CONFIG naming the module and the problem. Every split waits for
   * it; call it first to fail at start-up rather than on the first split.
   */
  ready(): Promise<void>;
  /**
   * Terminates the threads, after waiting for handlers whose lane already
   * ended by their own terminal write (at most `returnGraceMs`); a handler
   * still holding its lane is terminated. Later splits fail with CLOSED. Idempotent.
   */
  close(): Promise<void>;
}

/** The compiled thread entry this module would use by default. */
export function defaultSandboxThreadFile(): string {
  const here = import.meta.url;
  const rel = here.endsWith('.ts') ? '../../../dist/src/coordinator/sandbox/sandbox-thread.js' : './sandbox-thread.js';
  return fileURLToPath(new URL(rel, here));
}

/** `module` as a URL: a URL or a URL string as is, a path resolved against the working directory; a missing file is refused. */
function moduleUrl(module: string | URL): string {
  let url: URL;
  if (module instanceof URL) url = module;
  else if (typeof module === 'string' && module !== '') {
    url = /^[a-z][a-z0-9+.-]+:/i.test(module) && !isAbsolute(module) ? new URL(module) : pathToFileURL(resolve(module));
  } else {
    throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: module must be a file path or a URL (got ${typeof module === 'string' ? '""' : typeof module})`);
  }
  if (url.protocol === 'file:' && !existsSync(fileURLToPath(url))) {
    throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: handler module ${fileURLToPath(url)} does not exist`);
  }
  return url.href;
}

/** A sandbox failure in the terms of the coordinator's option (`handlerModule: …`), for the errors of its start. */
export function asHandlerModuleError(e: unknown): unknown {
  return isSplitfleetError(e) ? new SplitfleetError(e.code, `handlerModule: ${e.message.replace(/^sandboxedHandler: /, '')}`) : e;
}

/**
 * A SplitHandler that runs `module`'s handler export (default: its default
 * export) in worker threads. The module is imported once per thread, so
 * module-level state is per thread, not per process. A thread keeps CPU work
 * off the loop that renews the lease; it is not a security boundary (same
 * process, file system, network, environment and credentials).
 *
 * Why one function: the pool, its readiness and the mirrored handle (`runSplit`) are closures over
 * one state (the pool, `closed`, the probe, the returning tasks); split up, every piece would take
 * all of it as arguments.
 */
export function sandboxedHandler(module: string | URL, options: SandboxOptions = {}): SandboxedHandler {
  const url = moduleUrl(module);
  const threads = options.threads ?? availableParallelism();
  if (!Number.isSafeInteger(threads) || threads < 1) {
    throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: threads must be an integer ≥ 1 (got ${String(threads)})`);
  }
  const exportName = options.exportName ?? 'default';
  if (typeof exportName !== 'string' || exportName === '') {
    throw new SplitfleetError('INVALID_CONFIG', 'sandboxedHandler: exportName must be a non-empty string');
  }
  const returnGraceMs = options.returnGraceMs ?? 10_000;
  if (!Number.isSafeInteger(returnGraceMs) || returnGraceMs < 0) {
    throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: returnGraceMs must be an integer ≥ 0 (got ${String(returnGraceMs)})`);
  }
  const file = options.threadFile ?? defaultSandboxThreadFile();
  if (!existsSync(file)) {
    throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: thread file ${file} not found (run "npm run build")`);
  }
  // Every thread at once and for good: a thread per lane, and module state that is not lost to an idle timeout.
  // No atomics: between tasks a thread's loop keeps running (what a handler left behind, timers, finishes).
  const piscina = withThreadExecArgv((execArgv) => new Piscina({
    filename: pathToFileURL(file).href, minThreads: threads, maxThreads: threads, atomics: 'disabled', execArgv,
  }));
  let closed = false;
  let probe: Promise<void> | undefined;
  /** Tasks whose lane ended by their own terminal write, still returning: close() waits for them (their grace bounds it). */
  const returning = new Set<Promise<unknown>>();

  const ready = (): Promise<void> => {
    probe ??= (async () => {
      let reply: SandboxReply;
      try {
        reply = (await piscina.run({ kind: 'probe', module: url, exportName })) as SandboxReply;
      } catch (e) {
        throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: loading ${url} failed on its thread: ${toWire(e).message}`, { cause: e });
      }
      if (!reply.ok) throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: cannot load the handler: ${reply.error.message}`);
    })();
    return probe;
  };

  const handler = async (split: SplitHandle): Promise<void> => {
    if (closed) throw closedError();
    await ready();
    return runSplit(split);
  };

  // Why one function: one lane's mirror: the flags, the port, the count of terminal writes in flight
  // and the grace timer are shared by its listeners, the calls it serves and the run's cleanup.
  const runSplit = async (split: SplitHandle): Promise<void> => {
    if (split.signal.aborted) return;
    const flags = new Int32Array(new SharedArrayBuffer(FLAG_SLOTS * Int32Array.BYTES_PER_ELEMENT));
    const { port1, port2 } = new MessageChannel();
    const kill = new AbortController();
    let terminalPending = 0;
    let ownEnd = false;
    let grace: NodeJS.Timeout | undefined;
    let running: Promise<unknown> | undefined;
    const post = (m: MainMessage): void => {
      try {
        port1.postMessage(m);
      } catch {
        // the port is closed: the task has ended
      }
    };
    // After an abort: terminate the thread, unless the lane ended by the handler's own terminal
    // write (then it gets returnGraceMs to return); decided once no such write is in flight.
    const decide = (): void => {
      if (!split.signal.aborted || terminalPending > 0 || kill.signal.aborted) return;
      if (!ownEnd) return kill.abort();
      grace ??= setTimeout(() => kill.abort(), returnGraceMs);
      if (running) returning.add(running);
    };
    const onDrain = (): void => {
      Atomics.store(flags, FLAG_DRAINING, 1);
      post({ type: 'drain' });
    };
    const onAbort = (): void => {
      Atomics.store(flags, FLAG_ABORTED, 1);
      post({ type: 'abort', reason: toWire(split.signal.reason) });
      decide();
    };
    // Division requests (decision 0063) the thread has still to answer: by number, the real request and what ends its wait.
    const asked = new Map<number, { request: DivisionRequest; answered: () => void }>();
    let requests = 0;
    const serve = async (m: CallMessage): Promise<void> => {
      const terminal = m.method === 'complete' || m.method === 'fail' || m.method === 'release';
      if (terminal) terminalPending++;
      try {
        const arg = m.args[0];
        let value: DivideOutcome | undefined;
        switch (m.method) {
          case 'onDivide':
            split.onDivide((request) => new Promise<void>((answered) => {
              const n = ++requests;
              asked.set(n, { request, answered });
              post({ type: 'divide-request', request: n, seq: request.seq, share: request.share, weight: request.weight, progress: request.progress, ...(request.end !== undefined ? { end: request.end } : {}) });
            }));
            break;
          case 'divide': {
            const a = asked.get(arg as number);
            if (!a) throw new SplitfleetError('INVALID_INPUT', `split ${split.id}: divide() called twice, or after its callback returned`);
            asked.delete(arg as number);
            const landed = a.request.divide(m.args[1] as DivisionProposal);
            a.answered(); // proposed: the callback's wait ends, the division's own goes on
            value = { landed: await landed, weight: split.weight, ...(split.end !== undefined ? { end: split.end } : {}) };
            break;
          }
          case 'undivided':
            asked.get(arg as number)?.answered();
            asked.delete(arg as number);
            break;
          case 'commit': await split.commit(arg as Json, m.args[1] as CommitOptions | undefined); break;
          case 'advance': split.advance(arg as Json, m.args[1] as CommitOptions | undefined); break;
          case 'complete': await split.complete(arg as Json | undefined); break;
          case 'fail': await split.fail(String(arg), m.args[1] as FailOptions | undefined); break;
          case 'release': await split.release(arg as Json | undefined); break;
          case 'decline': split.decline(); break;
          case 'heartbeat': split.heartbeat(arg as Json | undefined); break;
        }
        if (terminal) ownEnd = true;
        post({ type: 'reply', id: m.id, ok: true, ...(value !== undefined ? { value } : {}) });
      } catch (e) {
        post({ type: 'reply', id: m.id, ok: false, error: toWire(e) });
      } finally {
        if (terminal) {
          terminalPending--;
          decide();
        }
      }
    };
    port1.on('message', (m: CallMessage) => {
      if (m?.type === 'call') void serve(m);
    });
    if (split.drainSignal.aborted) Atomics.store(flags, FLAG_DRAINING, 1);
    split.drainSignal.addEventListener('abort', onDrain, { once: true });
    split.signal.addEventListener('abort', onAbort, { once: true });

    const task: SplitTask = {
      kind: 'split', module: url, exportName, flags: flags.buffer as SharedArrayBuffer, port: port2,
      split: {
        id: split.id, weight: split.weight, descriptor: split.descriptor, progress: split.progress, epoch: split.epoch, attempts: split.attempts,
        ...(split.end !== undefined ? { end: split.end } : {}),
      },
    };
    let reply: SandboxReply;
    try {
      running = piscina.run(task, { transferList: [port2], signal: kill.signal });
      reply = (await running) as SandboxReply;
    } catch (e) {
      // Stopped because the split is gone: return, as a handler that sees `signal` abort should. A
      // throw would report a drain that "failed" over a forced release already under way (and a
      // declined drain would be counted as forced); any write after it is refused anyway.
      if (kill.signal.aborted) return;
      // A retryable CLOSED: the pool going away says nothing about the split, so no attempt is spent on it.
      if (closed) throw closedError();
      throw new Error(`split ${split.id}: the sandboxed handler's thread failed: ${toWire(e).message}`, { cause: e });
    } finally {
      split.drainSignal.removeEventListener('abort', onDrain);
      split.signal.removeEventListener('abort', onAbort);
      clearTimeout(grace);
      if (running) returning.delete(running);
      port1.close();
    }
    if (reply.ok) return;
    if (reply.stage === 'load') throw new SplitfleetError('INVALID_CONFIG', `sandboxedHandler: cannot load the handler: ${reply.error.message}`);
    throw fromWire(reply.error);
  };

  return Object.assign(handler, {
    module: url,
    exportName,
    threads,
    ready,
    close: async (): Promise<void> => {
      if (closed) return;
      closed = true;
      // A handler that has already completed (say) may be flushing or closing files: let it finish.
      await Promise.allSettled([...returning]);
      await piscina.destroy();
    },
  });
}

function closedError(): SplitfleetError {
  return new SplitfleetError('CLOSED', 'sandboxedHandler: used after close()', { retryable: true });
}
