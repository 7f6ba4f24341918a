/**
 * How a worker thread is started with the parent's flags: the execArgv a
 * thread may get (`threadExecArgv`) and the retry without the flags Node
 * refuses for a thread (`withThreadExecArgv`), decision 0019. Both Piscina
 * pools start their threads through it: the assignment pool
 * (assignment/pool.ts) and the sandboxed handlers (coordinator/sandbox/sandbox.ts).
 * A leaf: it reads `process` and imports nothing, piscina included.
 */

/**
 * The flags a Piscina thread starts with: the parent's, and on a Node that
 * has `require(esm)`, that turned off. Piscina loads a thread file with `require()` first, then
 * `import()`; under Node 20's `require(esm)` that first load raced an
 * `import()` of the same graph and aborted the whole process ("FATAL ERROR:
 * v8::Module::IsGraphAsync must be used on an instantiated module", seen once
 * in CI). With it off, `require()` refuses at once (ERR_REQUIRE_ESM) and the
 * thread file is imported.
 */
export function threadExecArgv(): string[] {
  const flag = '--no-experimental-require-module';
  return process.allowedNodeEnvironmentFlags.has('--experimental-require-module') ? [...process.execArgv, flag] : process.execArgv;
}

/**
 * `start(threadExecArgv())`; when Node refuses some of the parent's flags for
 * a thread, again without them. Why: a Worker given an explicit `execArgv` rejects V8 and per-process
 * flags (`--expose-gc`, `--trace-gc`, `--cpu-prof`: ERR_WORKER_INVALID_EXEC_ARGV,
 * thrown by `new Piscina` as it starts its threads), where an inherited one
 * ignores them; a parent run with such a flag must not lose its threads.
 * Node names the refused flags in the message; if it names none that we
 * passed, the threads get only the flags this file adds.
 */
export function withThreadExecArgv<T>(start: (execArgv: string[]) => T): T {
  const argv = threadExecArgv();
  try {
    return start(argv);
  } catch (e) {
    if ((e as { code?: unknown } | null)?.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
    const refused = new Set((/flags: (.*)$/.exec(e instanceof Error ? e.message : '')?.[1] ?? '').split(/,\s*/));
    const kept = argv.filter((a) => !refused.has(a));
    return start(kept.length < argv.length ? kept : argv.filter((a) => !process.execArgv.includes(a)));
  }
}
