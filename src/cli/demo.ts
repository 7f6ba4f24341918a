/**
 * `splitfleet demo`: one bounded synthetic job end to end, on the embedded
 * MemoryStore (in-process workers, no etcd needed) or, when `--etcd` (or
 * `--endpoints`) or SPLITFLEET_ETCD_ENDPOINTS or ETCDCTL_ENDPOINTS names an
 * etcd, on etcd with every worker its own OS process. The first line of
 * stdout says which store and what chose it, so a variable left in a shell
 * never changes the run silently (decision 0050); unlike the other commands
 * there is no default endpoint. Live view on a terminal, plain lines
 * otherwise; `--json` adds the summary as the last line of stdout.
 *
 * Exit codes: 0 the job completed and the ledger lost nothing; 1 a unit was
 * lost, the job stalled (a quarantined split, or no verdict before
 * --timeout) or was interrupted, or anything else failed; 2 refused options.
 *
 * Argument parsing and output only: the run is src/demo/run.ts.
 */
import type { Command } from 'commander';
import { SplitfleetError } from '../index.js';
import { DEMO_TIMINGS, runDemo, type DemoOptions } from '../demo/run.js';
import { colorEnabled } from './color.js';
import { CONNECTION_ENV, namedEndpoints, type NamedEndpoints } from './connect.js';
import { exitCodesHelp } from './exit-codes.js';

interface DemoCliOptions {
  workers: string;
  splits: string;
  lanes: string;
  rate: string;
  seed: string;
  commitEvery: string;
  rebalanceDelay: string;
  drainDeadline: string;
  kill: string;
  join: string;
  stall: string;
  killLeader?: boolean;
  poison: string;
  layout: string;
  etcd?: string;
  endpoints?: string;
  job?: string;
  root: string;
  timeout: string;
  json?: boolean;
  plain?: boolean;
}

export const DEMO_DEFAULTS = Object.freeze({
  workers: 4, splits: 160, lanes: 4, rate: 5, seed: 1, commitEvery: 5, timeout: 300,
});

/** Adds the `demo` subcommand to `program`. */
export function registerDemo(program: Command): void {
  const d = DEMO_DEFAULTS;
  program
    .command('demo')
    .description('run one bounded synthetic job end to end (a leader, W workers, a ledger of every processed unit)')
    .option('--workers <n>', 'workers at the start', String(d.workers))
    .option('--splits <n>', 'splits the synthetic planner enumerates (skewed sizes, 4 to 60 units of 1 MiB)', String(d.splits))
    .option('--lanes <n>', 'lane budget (maxInFlight) of every worker', String(d.lanes))
    .option('--rate <units>', 'processing pace: units per second per lane', String(d.rate))
    .option('--seed <n>', 'seed of the split sizes', String(d.seed))
    .option('--commit-every <units>', 'commit progress every this many units', String(d.commitEvery))
    .option('--rebalance-delay <ms>', 'rebalanceDelayMs: how long a departed worker\'s splits are withheld', String(DEMO_TIMINGS.rebalanceDelayMs))
    .option('--drain-deadline <ms>', 'drainDeadlineMs: how long a cooperative drain may run before it is forced', String(DEMO_TIMINGS.drainDeadlineMs))
    .option('--kill <k>', 'chaos: kill K workers at 25% (SIGKILL; in memory, a crash without release)', '0')
    .option('--stall <k>', 'chaos: stall K workers at 30% for one lease + 2 s (SIGSTOP/SIGCONT; in memory, a pause)', '0')
    .option('--kill-leader', 'chaos: kill the leader at 40%')
    .option('--join <j>', 'chaos: add J workers at 50%', '0')
    .option('--poison <k>', 'make K splits fail every attempt: they end quarantined and the job stalls (exit 1)', '0')
    .option('--layout <layout>', 'how the job keeps its splits: keys (two records a split) or packed (queue pages; decision 0037)', 'keys')
    .option('--etcd <endpoints>', `run on etcd, every worker its own OS process: endpoints, comma-separated, each host:port or an http(s):// URL (env ${CONNECTION_ENV.etcd.join(', then ')}; none: in memory)`)
    .option('--endpoints <endpoints>', 'the same as --etcd (etcdctl\'s spelling)')
    .option('--job <name>', 'job name (default: "demo"; on etcd "demo-<time>", so runs never collide)')
    .option('--root <prefix>', 'key prefix root', 'splitfleet')
    .option('--timeout <s>', 'give up (stalled, exit 1) when the job has no verdict after this many seconds', String(d.timeout))
    .option('--json', 'print a summary object as the last line of stdout')
    .option('--plain', 'plain progress lines even on a terminal')
    .addHelpText(
      'after',
      `
The demo uses short protocol timings so that chaos resolves in seconds: leaseDurationMs ${DEMO_TIMINGS.leaseDurationMs},
opTimeoutMs ${DEMO_TIMINGS.opTimeoutMs}, rebalanceDelayMs ${DEMO_TIMINGS.rebalanceDelayMs}, drainDeadlineMs ${DEMO_TIMINGS.drainDeadlineMs}, `
        + `reconcileIntervalMs ${DEMO_TIMINGS.reconcileIntervalMs}
(the library's defaults are 30 s, 10 s, 20 s, 10 s and 30 s).

With the defaults the job takes 20 to 40 seconds. At the end the ledger is checked: every unit of every
completed split must have been processed at least once (duplicates are allowed: at-least-once delivery).
--json summary: {"planned","completed","quarantined","lost","duplicates","cooperativeRevocations",
"forcedRevocations","leaderChanges","durationMs","maxImbalance", ...}.
${exitCodesHelp('complete with nothing lost', '', 'a unit lost, the job stalled or interrupted, or any other failure')}`,
    )
    .action(async (options: DemoCliOptions) => {
      process.exitCode = await demo(options);
    });
}

function int(option: string, value: string, min: number, max = 1_000_000): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max) {
    throw new SplitfleetError('INVALID_INPUT', `--${option}: must be an integer ${min} ≤ n ≤ ${max} (got ${JSON.stringify(value)})`);
  }
  return n;
}

/**
 * Validates the options; throws INVALID_INPUT naming the option and the rule. `store`: the etcd the
 * flags or the environment name (namedEndpoints), undefined for the memory store.
 */
export function demoOptions(
  o: DemoCliOptions, stdoutIsTTY: boolean, columns: number | undefined, store: NamedEndpoints | undefined = namedEndpoints(o, process.env),
): DemoOptions {
  const workers = int('workers', o.workers, 1, 64);
  const splits = int('splits', o.splits, 1, 100_000);
  const lanes = int('lanes', o.lanes, 1, 256);
  const rate = Number(o.rate);
  if (o.rate.trim() === '' || !Number.isFinite(rate) || rate <= 0 || rate > 10_000) {
    throw new SplitfleetError('INVALID_INPUT', `--rate: must be a number of units per second, 0 < rate ≤ 10000 (got ${JSON.stringify(o.rate)})`);
  }
  const kill = int('kill', o.kill, 0, 64);
  const join = int('join', o.join, 0, 64);
  const stall = int('stall', o.stall, 0, 64);
  const killLeader = o.killLeader === true;
  if (kill + (killLeader ? 1 : 0) >= workers + join) {
    throw new SplitfleetError('INVALID_INPUT', `--kill: killing ${kill + (killLeader ? 1 : 0)} of ${workers + join} workers `
      + `(--workers plus --join) would leave nobody to finish the job; kill at most ${workers + join - 1}`);
  }
  if (kill + stall > workers - 1) {
    throw new SplitfleetError('INVALID_INPUT', `--stall: ${kill} kills plus ${stall} stalls need ${kill + stall} workers besides the leader, `
      + `and --workers ${workers} has ${workers - 1}`);
  }
  const drainDeadlineMs = int('drain-deadline', o.drainDeadline, DEMO_TIMINGS.opTimeoutMs, 600_000);
  const layout = o.layout ?? 'keys';
  if (layout !== 'keys' && layout !== 'packed') {
    throw new SplitfleetError('INVALID_INPUT', `--layout: must be keys or packed (got ${JSON.stringify(o.layout)})`);
  }
  const options: DemoOptions = {
    workers,
    splits,
    lanes,
    rate,
    seed: int('seed', o.seed, 0, 2 ** 32 - 1),
    commitEvery: int('commit-every', o.commitEvery, 1),
    rebalanceDelayMs: int('rebalance-delay', o.rebalanceDelay, 0, 600_000),
    drainDeadlineMs,
    kill,
    join,
    stall,
    killLeader,
    poison: int('poison', o.poison, 0, splits),
    layout,
    root: o.root,
    timeoutMs: int('timeout', o.timeout, 1, 86_400) * 1000,
    live: stdoutIsTTY && o.plain !== true,
    // Colour by the shared rules (NO_COLOR, FORCE_COLOR); the live view itself needs a terminal.
    color: colorEnabled(undefined, process.env, stdoutIsTTY),
  };
  if (!/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(o.root)) {
    throw new SplitfleetError('INVALID_INPUT', `--root: must be '/'-separated segments of [A-Za-z0-9._-] (got ${JSON.stringify(o.root)})`);
  }
  if (o.job !== undefined) {
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(o.job)) {
      throw new SplitfleetError('INVALID_INPUT', `--job: must be 1 to 128 characters of [A-Za-z0-9._-] (got ${JSON.stringify(o.job)})`);
    }
    options.job = o.job;
  }
  if (store !== undefined) options.etcd = store.endpoints;
  if (columns !== undefined) options.columns = columns;
  return options;
}

/** The demo's first line: which store it runs on, and what chose it. */
export function storeLine(store: NamedEndpoints | undefined): string {
  if (store === undefined) return `splitfleet demo: in memory (no --etcd, ${CONNECTION_ENV.etcd.join(' or ')} set)`;
  const why = store.from.startsWith('--') ? '' : ' (unset it to run in memory)';
  return `splitfleet demo: on etcd ${store.endpoints.join(',')}, from ${store.from}${why}`;
}

/** Runs the demo; returns the exit code. */
export async function demo(o: DemoCliOptions): Promise<number> {
  const store = namedEndpoints(o, process.env);
  const options = demoOptions(o, process.stdout.isTTY === true, process.stdout.columns, store);
  process.stdout.write(`${storeLine(store)}\n`);
  const abort = new AbortController();
  const interrupt = () => abort.abort();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    const summary = await runDemo(options, { write: (s) => process.stdout.write(s) }, abort.signal);
    if (o.json) {
      const { planned, completed, quarantined, unreadable, lost, duplicates, cooperativeRevocations, forcedRevocations, leaderChanges, durationMs, maxImbalance } = summary;
      process.stdout.write(`${JSON.stringify({
        planned, completed, quarantined, unreadable, lost, duplicates, cooperativeRevocations, forcedRevocations, leaderChanges, durationMs, maxImbalance,
        verdict: summary.verdict, units: summary.units, processed: summary.processed, moves: summary.moves, job: summary.job, store: summary.store,
        layout: summary.layout,
      })}\n`);
    }
    return summary.lost > 0 || summary.verdict !== 'complete' ? 1 : 0;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
}
