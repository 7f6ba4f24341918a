/**
 * `splitfleet inspect`: reads one job's records from etcd and prints its
 * state: leader and generation, members with lane budgets and loads (by
 * weight), each instance's assignment against what it holds, splits by
 * status, revocations in flight, plan finality and progress. `--json` prints
 * the same report as one JSON object per line; `--watch` re-lists on every
 * watch event (at most twice a second) until interrupted; `--serve PORT`
 * serves the same live as a web dashboard (src/dashboard/), the list of every
 * job under the root when `--job` is not given, with the operator actions
 * when `--actions` is. `--split ID`
 * shows one split; `--splits` a page of them as a table (`--limit`, `--after`),
 * reading only those splits' records (src/inspect/split-read.ts); a packed
 * job's queued and folded splits are read from their queue pages.
 *
 * Read-only: it never writes to the store (but for the dashboard's actions, with `--actions`). It never prints credentials: the
 * store options are built in connect.ts and go nowhere but the store.
 * Argument parsing and output only: the report is the public API's
 * (`readJobRecords`, `jobReport`, `renderReport`).
 */
import type { Command } from 'commander';
import { serveDashboard } from '../http.js';
import {
  inJobScope, isSplitfleetError, jobPrefix, jobSpan, MAX_SPLIT_PAGE, readFullReport, readJobReport, readSplit,
  readSplitPage, resolveConfig, SplitfleetError,
  type InspectResult, type JobReport, type Store,
} from '../index.js';
import { printable, printableJson, renderReport, renderSplit, renderSplitTable, renderSummaryReport } from '../text.js';
import { colorEnabled } from './color.js';
import { addConnectionOptions, connectStore, type EtcdCliOptions } from './connect.js';
import { exitCodesHelp } from './exit-codes.js';

export interface InspectOptions extends EtcdCliOptions {
  /** Required but with --serve (which then lists every job). */
  job?: string;
  root?: string;
  json?: boolean;
  watch?: boolean;
  serve?: string;
  host?: string;
  actions?: boolean;
  split?: string;
  splits?: boolean;
  limit?: string;
  after?: string;
  /** --color / --no-color; undefined: the environment and the terminal decide (color.ts). */
  color?: boolean;
}

/** Adds the `inspect` subcommand to `program`. */
export function registerInspect(program: Command): void {
  const command = program
    .command('inspect')
    .description('print the state of one job on etcd: leader, members, assignments vs holdings, splits, revocations, progress')
    .option('--job <name>', 'the job\'s name (with --serve, optional: without it the dashboard opens on the list of jobs)')
    .option('--root <prefix>', 'key prefix root the job lives under (env SPLITFLEET_ROOT)', 'splitfleet')
    .option('--json', 'print the report as one JSON object (one per refresh with --watch)')
    .option('--watch', 'keep watching and refresh on every change (Ctrl-C to stop)')
    .option('--serve <port>', 'serve a live, read-only web dashboard of the job on this port (0: any free port) until Ctrl-C')
    .option('--host <address>', 'address the dashboard binds (with --serve)', '127.0.0.1')
    .option('--actions', 'with --serve: offer pause, resume and retry on the dashboard (off by default: read-only)')
    .option('--split <id>', 'show one split: status, owner, epoch, attempts, lease, weight, progress, last reason, age')
    .option('--splits', 'show a page of the job\'s splits as a table, in id order (a packed job\'s: queue page order), with --limit, --after')
    .option('--limit <n>', `splits per page with --splits (1 to ${MAX_SPLIT_PAGE})`, '50')
    .option('--after <id>', 'with --splits: start after this split id (the previous page\'s last, printed as "more: --after ID")')
    .option('--color', 'colour the report even when stdout is not a terminal')
    .option('--no-color', 'never colour (NO_COLOR and FORCE_COLOR are read otherwise)');
  addConnectionOptions(command)
    .addHelpText(
      'after',
      '\nReads <root>/<job>/ and never writes (--split, --splits: only those splits\' records). Credentials are\n'
        + 'never printed; pass the password through SPLITFLEET_ETCD_PASSWORD rather than --password, which\n'
        + 'other users can see in the process list.\n'
        + `${exitCodesHelp('printed', 'no such job, no such split')}`,
    )
    .action(async (options: InspectOptions) => {
      await inspect(options);
    });
}

/** Validates --job and --root with the library's own rules, as CLI refusals. */
function checkNames(job: string, root: string): void {
  try {
    resolveConfig({ job, root, instance: 'inspect' });
  } catch (e) {
    if (isSplitfleetError(e, 'INVALID_CONFIG')) throw new SplitfleetError('INVALID_INPUT', `--${e.message}`);
    throw e;
  }
}

/**
 * The job's report: from the leader's summary when it speaks for the job now, else from every
 * record (never a nested job's: decision 0027). Either way the report names its source (decision 0040).
 */
export async function readInspection(store: Store, root: string, job: string): Promise<InspectResult> {
  return readJobReport({ store, root, job });
}

/** Every record of the job (never a nested job's: decision 0027), whatever summary it has. */
export async function readReport(store: Store, root: string, job: string): Promise<JobReport> {
  return readFullReport({ store, root, job });
}

/** A report as text or one JSON line, whichever source it came from. */
function formatReport(result: InspectResult, json: boolean, color: boolean): string {
  if (json) return `${printableJson(result.report)}\n`;
  return result.source === 'summary' ? renderSummaryReport(result.report, { color }) : renderReport(result.report, { color });
}

/** Runs `inspect` with parsed options. */
export async function inspect(options: InspectOptions): Promise<void> {
  const root = options.root ?? 'splitfleet';
  const port = options.serve === undefined ? undefined : servePort(options);
  if (options.actions && port === undefined) throw new SplitfleetError('INVALID_INPUT', '--actions: needs --serve (the dashboard\'s buttons)');
  if (port !== undefined) {
    checkNames(options.job ?? 'x', root);
    splitsLimit(options); // refuses --split, --splits, --watch beside --serve
    const store = await connectStore(options);
    try {
      await serve(store, root, port, options);
    } finally {
      await store.close();
    }
    return;
  }
  if (options.job === undefined) throw new SplitfleetError('INVALID_INPUT', '--job: required (only --serve lists every job)');
  await inspectJob({ ...options, job: options.job }, root);
}

/** Everything `inspect` does but serve: one job, named. */
async function inspectJob(options: InspectOptions & { job: string }, root: string): Promise<void> {
  checkNames(options.job, root);
  const limit = splitsLimit(options);
  const store = await connectStore(options);
  try {
    if (options.split !== undefined) {
      const { page, split } = await readSplit({ store, root, job: options.job, id: options.split });
      if (!page.exists) throw noSuchJob(options.job, root, page.prefix);
      if (split === null) {
        throw new SplitfleetError('INVALID_INPUT', `--split: job ${JSON.stringify(options.job)} has no split ${printable(JSON.stringify(options.split))} (\`splitfleet inspect --splits\` lists them)`);
      }
      process.stdout.write(options.json ? `${printableJson({ ...page, splits: undefined, split })}\n` : renderSplit(page, split));
      return;
    }
    if (limit !== undefined) {
      const page = await readSplitPage({ store, root, job: options.job, limit, ...(options.after !== undefined ? { after: options.after } : {}) });
      if (!page.exists) throw noSuchJob(options.job, root, page.prefix);
      process.stdout.write(options.json ? `${printableJson(page)}\n` : renderSplitTable(page));
      return;
    }
    if (options.watch) {
      await watch(store, root, options);
      return;
    }
    const result = await readInspection(store, root, options.job);
    if (!result.report.exists) throw noSuchJob(options.job, root, result.report.prefix);
    process.stdout.write(formatReport(result, options.json === true, useColor(options)));
  } finally {
    await store.close();
  }
}

/** "No such job": a refusal (exit 2), as for the operator commands. */
function noSuchJob(job: string, root: string, prefix: string): SplitfleetError {
  return new SplitfleetError('INVALID_INPUT', `no job ${JSON.stringify(job)} under ${root}/: nothing is stored at ${prefix} (check --job and --root)`);
}

/** The page size when --splits is given (undefined otherwise), refusing --limit or --after without it and views that do not combine. */
function splitsLimit(options: InspectOptions): number | undefined {
  const views = [options.split !== undefined && '--split', options.splits === true && '--splits', options.watch === true && '--watch', options.serve !== undefined && '--serve']
    .filter((v): v is string => v !== false);
  if (views.length > 1) throw new SplitfleetError('INVALID_INPUT', `${views[0]}: cannot be combined with ${views[1]}`);
  if (options.splits !== true) {
    if (options.after !== undefined) throw new SplitfleetError('INVALID_INPUT', '--after: needs --splits');
    return undefined;
  }
  const limit = Number(options.limit ?? '50');
  if (!/^\d+$/.test(options.limit ?? '50') || limit < 1 || limit > MAX_SPLIT_PAGE) {
    throw new SplitfleetError('INVALID_INPUT', `--limit: must be an integer from 1 to ${MAX_SPLIT_PAGE} (got ${JSON.stringify(options.limit)})`);
  }
  return limit;
}

/** Checks --serve's port and what it cannot be combined with. */
function servePort(options: InspectOptions): number {
  const port = Number(options.serve);
  if (options.serve!.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SplitfleetError('INVALID_INPUT', `--serve: must be a port number 0 ≤ port ≤ 65535 (got ${JSON.stringify(options.serve)})`);
  }
  if (options.watch || options.json) {
    throw new SplitfleetError('INVALID_INPUT', `--serve: cannot be combined with ${options.watch ? '--watch' : '--json'} (the dashboard is its own live view)`);
  }
  return port;
}

/** Serves the dashboard until SIGINT or SIGTERM. */
async function serve(store: Store, root: string, port: number, options: InspectOptions): Promise<void> {
  const host = options.host ?? '127.0.0.1';
  const actions = options.actions === true;
  const dashboard = await serveDashboard({ store, root, host, port, actions, ...(options.job !== undefined ? { job: options.job } : {}) });
  try {
    const what = options.job !== undefined ? jobPrefix(root, options.job) : `the jobs under ${root}/`;
    process.stdout.write(`dashboard of ${what} at ${dashboard.url} (${actions ? 'with pause, resume and retry' : 'read-only'}; Ctrl-C to stop)\n`);
    if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
      process.stderr.write(`splitfleet inspect: the dashboard has no authentication: anyone who can reach ${host}:${dashboard.port} can read the jobs' state${actions ? ' and pause, resume and retry them' : ''}\n`);
    }
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
  } finally {
    await dashboard.close();
  }
}

function useColor(options: InspectOptions): boolean {
  return colorEnabled(options.color, process.env, process.stdout.isTTY === true);
}

/** Re-lists on watch events, at most every 500 ms, until SIGINT or SIGTERM. */
async function watch(store: Store, root: string, options: InspectOptions & { job: string }): Promise<void> {
  const tty = process.stdout.isTTY === true && !options.json;
  const prefix = jobPrefix(root, options.job);
  let dirty = true;
  let failure: SplitfleetError | undefined;
  let wake: (() => void) | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const handle = store.watch(prefix, {
    ...jobSpan(prefix),
    onEvent: (e) => {
      if (!inJobScope(prefix, e.key)) return; // a nested job's change, inside the span
      dirty = true;
      poke();
    },
    onError: (e) => {
      failure = e;
      poke();
    },
  });
  let stopped = false;
  const stop = () => {
    stopped = true;
    poke();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await handle.ready;
    let first = true;
    while (!stopped) {
      if (failure) throw failure;
      if (dirty) {
        dirty = false;
        const result = await readInspection(store, root, options.job);
        if (options.json) {
          process.stdout.write(formatReport(result, true, false));
        } else {
          const text = formatReport(result, false, useColor(options));
          const footer = `watching ${prefix} · updated ${new Date().toLocaleTimeString()} · Ctrl-C to stop\n`;
          process.stdout.write(tty ? `\x1b[H\x1b[2J${text}\n${footer}` : `${first ? '' : '\n'}${text}`);
        }
        first = false;
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      await new Promise<void>((r) => {
        wake = r;
      });
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await handle.close();
  }
}
