/**
 * `splitfleet inspect`: reads one job's records from etcd and prints its
 * state: leader and generation, members with lane budgets and loads (by
 * weight), each instance's assignment against what it holds, splits by
 * status, revocations in flight, plan finality and progress. `--json` prints
 * the same report as one JSON object per line; `--watch` re-lists on every
 * watch event (at most twice a second) until interrupted; `--serve PORT`
 * serves the same live as a web dashboard (src/inspect/serve.ts).
 *
 * Read-only: it never writes to the store. It never prints credentials: the
 * store options are built in connect.ts and go nowhere but the store.
 * Argument parsing and output only: the report is the public API's
 * (`readJobRecords`, `jobReport`, `renderReport`).
 */
import type { Command } from 'commander';
import { EtcdStore } from '../etcd.js';
import { serveDashboard } from '../http.js';
import {
  inJobScope, isSplitfleetError, jobPrefix, jobReport, jobSpan, listJobKeys, printableJson, readJobRecords, renderReport, resolveConfig,
  SplitfleetError,
  type JobReport, type Store,
} from '../index.js';
import { addEtcdSecurityOptions, etcdStoreOptions, type EtcdCliOptions } from './connect.js';

export interface InspectOptions extends EtcdCliOptions {
  job: string;
  root?: string;
  json?: boolean;
  watch?: boolean;
  serve?: string;
  host?: string;
}

/** Adds the `inspect` subcommand to `program`. */
export function registerInspect(program: Command): void {
  const command = program
    .command('inspect')
    .description('print the state of one job on etcd: leader, members, assignments vs holdings, splits, revocations, progress')
    .requiredOption('--etcd <urls>', 'etcd client URL(s), comma-separated')
    .requiredOption('--job <name>', 'the job\'s name')
    .option('--root <prefix>', 'key prefix root the job lives under', 'splitfleet')
    .option('--json', 'print the report as one JSON object (one per refresh with --watch)')
    .option('--watch', 'keep watching and refresh on every change (Ctrl-C to stop)')
    .option('--serve <port>', 'serve a live, read-only web dashboard of the job on this port (0: any free port) until Ctrl-C')
    .option('--host <address>', 'address the dashboard binds (with --serve)', '127.0.0.1');
  addEtcdSecurityOptions(command)
    .addHelpText(
      'after',
      '\nReads <root>/<job>/ and never writes. Credentials are never printed; pass the password through\n'
        + 'SPLITFLEET_ETCD_PASSWORD rather than --password, which other users can see in the process list.\n'
        + 'Exit codes: 0 printed; 2 refused (bad options); 1 any other failure (etcd unreachable, no such job).',
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

/** Lists the job's keys (never a nested job's: decision 0027) and builds the report. */
export async function readReport(store: Store, root: string, job: string): Promise<JobReport> {
  const prefix = jobPrefix(root, job);
  const { kvs, revision } = await listJobKeys(store, prefix);
  const { records, fp, problems } = readJobRecords(prefix, kvs);
  return jobReport(records, { root, job, prefix, revision, fingerprintHash: fp, problems, now: Date.now() });
}

/** Runs `inspect` with parsed options. */
export async function inspect(options: InspectOptions): Promise<void> {
  const root = options.root ?? 'splitfleet';
  checkNames(options.job, root);
  const port = options.serve === undefined ? undefined : servePort(options);
  const store = new EtcdStore(etcdStoreOptions(options));
  try {
    if (port !== undefined) {
      await serve(store, root, port, options);
      return;
    }
    if (options.watch) {
      await watch(store, root, options);
      return;
    }
    const report = await readReport(store, root, options.job);
    if (!report.exists) {
      throw new Error(`no job ${JSON.stringify(options.job)} under ${root}/: nothing is stored at ${report.prefix} (check --job and --root)`);
    }
    process.stdout.write(options.json ? `${printableJson(report)}\n` : renderReport(report, { color: useColor() }));
  } finally {
    await store.close();
  }
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
  const dashboard = await serveDashboard({ store, job: options.job, root, host, port });
  try {
    process.stdout.write(`dashboard of ${jobPrefix(root, options.job)} at ${dashboard.url} (read-only; Ctrl-C to stop)\n`);
    if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
      process.stderr.write(`splitfleet inspect: the dashboard has no authentication: anyone who can reach ${host}:${dashboard.port} can read the job's state\n`);
    }
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
  } finally {
    await dashboard.close();
  }
}

function useColor(): boolean {
  return process.stdout.isTTY === true && process.env.NO_COLOR === undefined;
}

/** Re-lists on watch events, at most every 500 ms, until SIGINT or SIGTERM. */
async function watch(store: Store, root: string, options: InspectOptions): Promise<void> {
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
        const report = await readReport(store, root, options.job);
        if (options.json) {
          process.stdout.write(`${printableJson(report)}\n`);
        } else {
          const text = renderReport(report, { color: useColor() });
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
