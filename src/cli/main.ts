#!/usr/bin/env node
/**
 * The `splitfleet` command: a thin dispatcher. Each subcommand lives in its
 * own module and registers itself here: `plan`, `demo`, `inspect`, and the
 * operator commands (`jobs`, `retry`, `pause`, `resume`, `evacuate`, `delete`).
 *
 * Exit codes, for every subcommand (exit-codes.ts, decision 0035): 0 success;
 * 2 refused (input that breaks a rule, unknown options or commands, no such
 * job or split); 1 any other failure. A refusal or failure is one line on
 * stderr, `splitfleet <command>: <field>: <rule>`, and nothing on stdout.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { isSplitfleetError } from '../index.js';
import { printable } from '../text.js';
import { registerDemo } from './demo.js';
import { EXIT_FAILURE, EXIT_REFUSED, exitCodesHelp } from './exit-codes.js';
import { registerInspect } from './inspect.js';
import { registerOperate } from './operate.js';
import { registerPlan } from './plan.js';
import { registerSubmit } from './submit.js';

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * One line: newlines and every other control escaped (a message may quote store text, decision
 * 0030), so a message can never spill onto a second line or act on the terminal.
 */
function oneLine(text: string): string {
  return printable(text.trim().replace(/\r?\n\(/g, ' ('));
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
    .configureOutput(errorOutput('splitfleet'))
    .addHelpText('after', `\n${exitCodesHelp('success', 'no such job or split')}\nEvery command's --help states its own.`);

  registerPlan(program);
  registerDemo(program);
  registerInspect(program);
  registerOperate(program);
  registerSubmit(program);

  let running = 'splitfleet';
  for (const command of program.commands) command.configureOutput(errorOutput(`splitfleet ${command.name()}`));
  program.hook('preAction', (_program, action) => {
    running = `splitfleet ${action.name()}`;
  });

  try {
    await program.parseAsync(argv);
    // An action may set its own exit code (demo: 1 when units were lost or the job stalled).
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Already printed by errorOutput; help and --version exit 0.
      return e.exitCode === 0 ? 0 : EXIT_REFUSED;
    }
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`${running}: ${oneLine(message)}\n`);
    return isSplitfleetError(e, 'INVALID_INPUT') || isSplitfleetError(e, 'JOB_CONFLICT') ? EXIT_REFUSED : EXIT_FAILURE;
  }
}

// etcd3's gRPC client names an IP endpoint as the TLS server name, which Node deprecates (DEP0123) with a
// two-line warning on stderr: not the user's concern, and it would break the one-line error promise.
const emitWarning = process.emitWarning.bind(process) as (...args: unknown[]) => void;
process.emitWarning = ((warning: unknown, ...rest: unknown[]) => {
  const options = rest[0];
  const code = typeof options === 'object' && options !== null ? (options as { code?: unknown }).code : rest[1];
  if (code === 'DEP0123') return;
  // The store's own warning about a password sent in clear: connect.ts has said it in the CLI's words.
  if (code === 'SPLITFLEET_CLEARTEXT_PASSWORD') return;
  emitWarning(warning, ...rest);
}) as typeof process.emitWarning;

// A reader that stops early (`splitfleet plan | head`) is not a failure of ours.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(process.exitCode ?? 0);
});

process.exitCode = await main(process.argv);
