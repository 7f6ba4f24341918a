/**
 * The operator commands: `jobs`, `retry`, `pause`, `resume`, `evacuate`,
 * `delete`. Argument parsing and output only; each action is the library's
 * (src/operator/), so a program can do what the CLI does. Every command
 * prints one line per fact it changed, or `--json` one object; a refusal is
 * one line on stderr with exit code 2 (main.ts).
 */
import type { Command } from 'commander';
import {
  deleteJob, evacuateInstance, listJobs, pauseJob, previewDelete, previewRetry, resumeInstance, resumeJob, retrySplits,
  type ControlResult, type JobSummary, type Store,
} from '../index.js';
import { alignColumns, printable, printableJson } from '../text.js';
import { addConnectionOptions, connectStore, type EtcdCliOptions } from './connect.js';
import { exitCodesHelp } from './exit-codes.js';

interface Common extends EtcdCliOptions {
  root: string;
  json?: boolean;
}

/** The options every operator command shares, and its exit codes on --help (`ok`: what 0 means; `refused`: what 2 covers). */
function common(command: Command, ok: string, refused = 'no such job'): Command {
  command
    .option('--root <prefix>', 'key prefix root the jobs live under (env SPLITFLEET_ROOT)', 'splitfleet')
    .option('--json', 'print the result as one JSON object');
  return addConnectionOptions(command).addHelpText('after', `\n${exitCodesHelp(ok, refused)}`);
}

async function withStore<T>(options: EtcdCliOptions, run: (store: Store) => Promise<T>): Promise<T> {
  const store = await connectStore(options);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** Prints `lines` (their store text made printable here, decision 0030, unless `escaped` already), or `json`. */
function print(options: Common, json: unknown, lines: string[], escaped = false): void {
  process.stdout.write(options.json ? `${printableJson(json)}\n` : `${(escaped ? lines : lines.map(printable)).join('\n')}\n`);
}

function controlLines(job: string, r: ControlResult, did: string, undid: string): string[] {
  return [
    r.changed ? `job ${job}: ${did}` : `job ${job}: ${undid} (nothing changed)`,
    `  paused ${r.paused ? 'yes' : 'no'}; evacuated ${r.evacuated.length === 0 ? 'none' : r.evacuated.join(', ')}`,
    // An unreadable record held the job paused (fail safe); this action wrote over it.
    ...(r.replaced !== undefined ? [`  replaced an unreadable control record (${r.replaced})`] : []),
  ];
}

/** Adds the operator commands to `program`, in the order `--help` lists them. */
export function registerOperate(program: Command): void {
  registerJobs(program);
  registerRetry(program);
  registerControl(program);
  registerDelete(program);
}

/** `jobs`: the jobs under a root. */
function registerJobs(program: Command): void {
  common(program.command('jobs').description('list the jobs under a root: verdict, progress, members'), 'listed (also when there are none)', '')
    .action(async (o: Common) => {
      const jobs = await withStore(o, (store) => listJobs({ store, root: o.root }));
      print(o, { root: o.root, jobs }, jobs.length === 0 ? [`no jobs under ${printable(o.root)}/`] : jobTable(jobs), true);
    });
}

/** `retry`: quarantined splits back to runnable (or, with --dry-run, the list of them). */
function registerRetry(program: Command): void {
  common(program.command('retry').description('return quarantined splits to runnable, attempts reset'), 'retried (or, with --dry-run, listed)', 'no such job, a split that is not quarantined')
    .requiredOption('--job <name>', 'the job')
    .option('--split <id...>', 'the quarantined split(s) to retry')
    .option('--all-quarantined', 'retry every quarantined split of the job')
    .option('--dry-run', 'list the splits that would be retried; write nothing')
    .action(async (o: Common & { job: string; split?: string[]; allQuarantined?: boolean; dryRun?: boolean }) => {
      const target = (store: Store) => ({
        store, root: o.root, job: o.job, ...(o.split ? { splits: o.split } : {}), ...(o.allQuarantined ? { allQuarantined: true } : {}),
      });
      if (o.dryRun === true) {
        const p = await withStore(o, (store) => previewRetry(target(store)));
        print(o, { job: o.job, dryRun: true, ...p }, [
          `job ${o.job}: would retry ${p.wouldRetry.length} split${p.wouldRetry.length === 1 ? '' : 's'} (dry run: nothing written)`,
          ...p.wouldRetry.map((id) => `  ${id}`),
          ...(p.verdictWouldClear ? ['  the stalled verdict would be cleared'] : []),
        ]);
        return;
      }
      const r = await withStore(o, (store) => retrySplits(target(store)));
      print(o, { job: o.job, ...r }, [
        `job ${o.job}: ${r.retried.length} split${r.retried.length === 1 ? '' : 's'} runnable again, attempts reset${r.retried.length > 0 ? `: ${r.retried.slice(0, 20).join(', ')}${r.retried.length > 20 ? ', …' : ''}` : ''}`,
        ...(r.verdictCleared ? ['  the stalled verdict is cleared: processes that stopped on it must be started again'] : []),
      ]);
    });
}

/** `pause`, `resume` and `evacuate`: the job's control record. */
function registerControl(program: Command): void {
  common(program.command('pause').description('pause a job: empty assignments, lanes drain, nothing is claimed, progress is kept'), 'paused (or already paused)')
    .requiredOption('--job <name>', 'the job')
    .action(async (o: Common & { job: string }) => {
      const r = await withStore(o, (store) => pauseJob({ store, root: o.root, job: o.job }));
      print(o, { job: o.job, ...r }, controlLines(o.job, r, 'paused; every lane drains and nothing is claimed until `splitfleet resume`', 'already paused'));
    });

  common(program.command('resume').description('resume a paused job, or (--instance) undo an evacuation'), 'resumed (or was not paused)')
    .requiredOption('--job <name>', 'the job')
    .option('--instance <id>', 'undo the evacuation of this instance (the job\'s pause is left as it is)')
    .action(async (o: Common & { job: string; instance?: string }) => {
      const r = await withStore(o, (store) => (o.instance !== undefined
        ? resumeInstance({ store, root: o.root, job: o.job, instance: o.instance })
        : resumeJob({ store, root: o.root, job: o.job })));
      print(o, { job: o.job, ...r }, o.instance !== undefined
        ? controlLines(o.job, r, `instance ${o.instance} is assigned work again`, `instance ${o.instance} was not evacuated`)
        : controlLines(o.job, r, 'resumed; the leader assigns work again', 'was not paused'));
    });

  common(program.command('evacuate').description('drain one instance and assign it nothing (ahead of a deploy)'), 'evacuated (or already)', 'no such job, no such live member')
    .requiredOption('--job <name>', 'the job')
    .requiredOption('--instance <id>', 'the live member to evacuate')
    .action(async (o: Common & { job: string; instance: string }) => {
      const r = await withStore(o, (store) => evacuateInstance({ store, root: o.root, job: o.job, instance: o.instance }));
      print(o, { job: o.job, ...r }, controlLines(o.job, r,
        `instance ${o.instance} evacuated: it drains and is assigned nothing until it restarts or \`splitfleet resume --instance ${o.instance}\``,
        `instance ${o.instance} was already evacuated`));
    });
}

/** `delete`: a job's keys (or, with --dry-run, the list of them). */
function registerDelete(program: Command): void {
  common(program.command('delete').description('remove a finished job\'s keys (a running job needs --force)'), 'deleted (or, with --dry-run, listed)', 'no such job, a running job without --force')
    .requiredOption('--job <name>', 'the job')
    .option('--force', 'delete a job that is running or has live processes: they stop (JOB_DELETED)')
    .option('--dry-run', 'list the keys that would go (a count per kind, then each key); delete nothing')
    .action(async (o: Common & { job: string; force?: boolean; dryRun?: boolean }) => {
      if (o.dryRun === true) {
        const p = await withStore(o, (store) => previewDelete({ store, root: o.root, job: o.job }));
        const kinds = Object.entries(p.byKind).map(([k, n]) => `${k} ${n}`).join(', ');
        print(o, { job: o.job, dryRun: true, ...p }, [
          `job ${o.job}: would delete ${p.keys.length} key${p.keys.length === 1 ? '' : 's'} (dry run: nothing deleted)${kinds === '' ? '' : `: ${kinds}`}`,
          ...(p.needsForce ? [`  needs --force: ${p.verdict === null ? 'no verdict yet' : `verdict ${p.verdict}`}; leader ${p.stops.leader ?? 'none'}; ${p.stops.members.length} live member(s); ${p.stops.held} held split(s)`] : []),
          ...p.keys.map((k) => `  ${k}`),
        ]);
        return;
      }
      const r = await withStore(o, (store) => deleteJob({ store, root: o.root, job: o.job, force: o.force === true }));
      print(o, { job: o.job, ...r }, [
        `job ${o.job}: deleted ${r.deleted} key${r.deleted === 1 ? '' : 's'}${r.verdict === null ? ' (it had no verdict)' : ` (verdict ${r.verdict})`}`,
        ...(r.stopped.length > 0 ? [`  stopped: ${r.stopped.join(', ')}`] : []),
      ]);
    });
}

function jobTable(jobs: JobSummary[]): string[] {
  const rows = [['job', 'verdict', 'progress', 'runnable', 'quarantined', 'members', 'leader', 'source']];
  for (const j of jobs) {
    const s = j.splits;
    const planned = j.plan?.planned ?? s.total;
    const state = j.problem !== null ? `unreadable: ${j.problem}` : j.verdict ?? (j.paused ? 'paused' : j.plan?.final ? 'running' : 'running (open plan)');
    rows.push([
      j.job, state, `${s.completed}/${planned} completed`, String(s.runnable), String(s.quarantined),
      j.members.length === 0 ? '0' : `${j.members.length} (${j.members.slice(0, 4).join(', ')}${j.members.length > 4 ? ', …' : ''})`,
      j.leader ?? '-',
      // Which read the counts are (decision 0040): the leader's summary and its age, or every split record.
      j.source === null ? '-' : j.source.kind === 'summary' ? `summary (${(j.source.ageMs / 1000).toFixed(1)} s old)`
        : j.plan?.layout === 'packed' ? 'every split record and queue page' : 'every split record',
    ]);
  }
  // Escaped here, before measuring (print() is told not to again: escaping is not idempotent), and
  // padded by display width: a CJK job or instance name takes two cells a character.
  return alignColumns(rows.map((r) => r.map(printable)));
}
