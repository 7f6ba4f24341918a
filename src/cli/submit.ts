/**
 * `submit` and `wait`: jobs as data from the command line (issue 50;
 * decision 0064). `submit` writes a job's definition (a kind and JSON
 * parameters) for a fleet that serves that kind (`serve`); `wait` follows a
 * job until its verdict and exits 0 for `complete`, 1 for `stalled`. Both
 * are the library's `submitJob` and `waitForJob`.
 */
import type { Command } from 'commander';
import { SplitfleetError, submitJob, waitForJob, type Json } from '../index.js';
import { printable, printableJson } from '../text.js';
import { addConnectionOptions, connectStore, type EtcdCliOptions } from './connect.js';
import { EXIT_FAILURE, exitCodesHelp } from './exit-codes.js';

interface Common extends EtcdCliOptions {
  root: string;
  json?: boolean;
}

function common(command: Command, ok: string, refused: string, failure?: string): Command {
  command
    .option('--root <prefix>', 'key prefix root the jobs live under (env SPLITFLEET_ROOT)', 'splitfleet')
    .option('--json', 'print the result as one JSON object');
  return addConnectionOptions(command).addHelpText('after', `\n${exitCodesHelp(ok, refused, failure)}`);
}

/** The parameters as given: JSON text, refused (INVALID_INPUT) naming the option when it is not. */
function paramsOf(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch (e) {
    throw new SplitfleetError('INVALID_INPUT', `--params: must be JSON (${(e as Error).message})`);
  }
}

/** Adds `submit` and `wait` to `program`. */
export function registerSubmit(program: Command): void {
  common(program.command('submit').description('submit a job: a kind and its parameters, for a fleet that serves that kind'), 'submitted (or the same job was already)', 'a different job under that name')
    .requiredOption('--job <name>', 'the job\'s name, unique under the root')
    .requiredOption('--kind <kind>', 'what kind of job (a fleet runs the kinds it serves)')
    .option('--params <json>', 'the job\'s parameters, as JSON', 'null')
    .action(async (o: Common & { job: string; kind: string; params: string }) => {
      const params = paramsOf(o.params);
      const store = await connectStore(o);
      try {
        const r = await submitJob({ store, root: o.root, job: o.job, kind: o.kind, params });
        process.stdout.write(o.json ? `${printableJson(r)}\n`
          : `${printable(`job ${o.job}: ${r.outcome === 'created' ? 'submitted' : 'already submitted, the same (nothing written)'}: ${r.definition.kind} ${JSON.stringify(r.definition.params)}`)}\n`);
      } finally {
        await store.close();
      }
    });

  common(program.command('wait').description('wait for a job\'s verdict (exit 0 complete, 1 stalled)'), 'complete', '', 'stalled, deleted, timed out, or any other failure')
    .requiredOption('--job <name>', 'the job')
    .option('--timeout <seconds>', 'give up after this long (exit 1)')
    .action(async (o: Common & { job: string; timeout?: string }) => {
      const timeoutMs = o.timeout === undefined ? undefined : Number(o.timeout) * 1000;
      if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new SplitfleetError('INVALID_INPUT', `--timeout: must be a number of seconds > 0 (got ${o.timeout})`);
      const store = await connectStore(o);
      try {
        const r = await waitForJob({ store, root: o.root, job: o.job, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
        const s = r.summary;
        process.stdout.write(o.json ? `${printableJson(r)}\n`
          : `${printable(`job ${o.job}: ${r.verdict}; ${r.planned} planned${s ? `, ${s.completed} completed, ${s.quarantined} quarantined` : ''}`)}\n`);
        if (r.verdict !== 'complete') process.exitCode = EXIT_FAILURE;
      } finally {
        await store.close();
      }
    });
}
