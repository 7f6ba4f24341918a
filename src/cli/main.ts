#!/usr/bin/env node
/**
 * The `splitfleet` command: a thin dispatcher. Each subcommand lives in its
 * own module and registers itself here (`plan` now; `demo`, `inspect` later).
 *
 * Exit codes, for every subcommand: 0 success; 2 refused (input that breaks a
 * rule, unknown options or commands); 1 any other failure. A refusal or
 * failure is one line on stderr, `splitfleet <command>: <field>: <rule>`,
 * and nothing on stdout.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { isSplitfleetError } from '../index.js';
import { registerPlan } from './plan.js';

const EXIT_FAILURE = 1;
const EXIT_REFUSED = 2;

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** One line: newlines escaped, so a message can never spill onto a second line. */
function oneLine(text: string): string {
  return text.trim().replace(/\r?\n\(/g, ' (').replace(/\r?\n/g, '\\n');
}

/** Commander's own errors ("error: unknown option '--x'") as `splitfleet <command>: ...`. */
function errorOutput(prefix: string) {
  return {
    outputError: (message: string, write: (s: string) => void) => write(`${prefix}: ${oneLine(message.replace(/^error: /, ''))}\n`),
  };
}

async function main(argv: string[]): Promise<number> {
  const program = new Command('splitfleet')
    .description('Divide a job\'s splits across a fleet of Node.js workers through etcd.')
    .version(version())
    .exitOverride()
    .configureOutput(errorOutput('splitfleet'));

  registerPlan(program);

  let running = 'splitfleet';
  for (const command of program.commands) command.configureOutput(errorOutput(`splitfleet ${command.name()}`));
  program.hook('preAction', (_program, action) => {
    running = `splitfleet ${action.name()}`;
  });

  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Already printed by errorOutput; help and --version exit 0.
      return e.exitCode === 0 ? 0 : EXIT_REFUSED;
    }
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`${running}: ${oneLine(message)}\n`);
    return isSplitfleetError(e, 'INVALID_INPUT') ? EXIT_REFUSED : EXIT_FAILURE;
  }
}

// A reader that stops early (`splitfleet plan | head`) is not a failure of ours.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(process.exitCode ?? 0);
});

process.exitCode = await main(process.argv);
