/**
 * `splitfleet plan`: reads an assignment input as JSON (a file or stdin),
 * decides it with `desiredAssignment`, writes `{ assignment, stats }` as JSON
 * (stdout or a file).
 *
 * Invariants: a refused input writes nothing to stdout and creates or
 * replaces no --output file (the file is written to a temporary name and
 * renamed only once the whole output exists). Refusals are thrown as
 * SplitfleetError('INVALID_INPUT') naming the field and the rule; main.ts
 * turns them into exit code 2 and one line on stderr.
 *
 * Argument parsing and output only: the decision is the public API's.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { desiredAssignment, type AssignmentInput, type EngineName } from '../engine.js';
import { SplitfleetError } from '../index.js';
import { exitCodesHelp } from './exit-codes.js';

export interface PlanOptions {
  input?: string;
  output?: string;
  engine?: EngineName;
  pretty?: boolean;
}

/** Adds the `plan` subcommand to `program`. */
export function registerPlan(program: Command): void {
  program
    .command('plan')
    .description('decide the desired assignment for one input (JSON in, JSON out)')
    .option('-i, --input <file>', 'read the input from FILE ("-" or absent: stdin)')
    .option('-o, --output <file>', 'write the result to FILE instead of stdout')
    .addOption(
      new Option('--engine <name>', 'the engine to decide with (default: the library default)').choices([
        'reference',
        'wasm',
      ]),
    )
    .option('--pretty', 'indent the JSON output')
    .addHelpText(
      'after',
      '\nInput: { seed, defaultCap?, members: [{ id, cap? }], splits: [{ id, weight, status?, leaseOwner?, ' +
        'recordOwner?, previous? }], reserved? }\nOutput: { assignment: { member: [split ids] }, stats }\n' +
        `${exitCodesHelp('decided', 'bad input', 'any other failure')}`,
    )
    .action(async (options: PlanOptions) => {
      await plan(options);
    });
}

/** Runs `plan` with parsed options; throws on refusal or failure, writes only on success. */
export async function plan(options: PlanOptions): Promise<void> {
  const text = await readInput(options.input);
  // Unchecked here: desiredAssignment validates the whole input before deciding.
  const input = parseJson(text) as AssignmentInput;
  const result = desiredAssignment(input, options.engine === undefined ? {} : { engine: options.engine });
  const out = `${JSON.stringify({ assignment: result.assignment, stats: result.stats }, null, options.pretty ? 2 : undefined)}\n`;
  if (options.output === undefined) {
    process.stdout.write(out);
  } else {
    await writeAtomically(options.output, out);
  }
}

async function readInput(file: string | undefined): Promise<string> {
  if (file !== undefined && file !== '-') {
    try {
      return await readFile(file, 'utf8');
    } catch (e) {
      throw new SplitfleetError('INVALID_INPUT', `--input: cannot read ${JSON.stringify(file)}: ${reason(e)}`, { cause: e });
    }
  }
  if (process.stdin.isTTY) {
    throw new SplitfleetError('INVALID_INPUT', '--input: no FILE given and stdin is a terminal; pass --input FILE or pipe the JSON in');
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** JSON.parse, refusing with the position (and line and column) when JSON.parse names one. */
function parseJson(text: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (body.trim() === '') {
    throw new SplitfleetError('INVALID_INPUT', 'input: must be JSON (an object with "members" and "splits"); got nothing');
  }
  try {
    return JSON.parse(body);
  } catch (e) {
    // Node 22+ (V8 12) appends its own " (line L column C)"; we name line and column once, in front, on every Node.
    const message = (e instanceof Error ? e.message : String(e)).replace(/ \(line \d+ column \d+\)$/, '');
    const at = /at position (\d+)/.exec(message);
    let where = '';
    if (at !== null) {
      const pos = Number(at[1]);
      const before = body.slice(0, pos);
      const line = before.split('\n').length;
      const column = pos - before.lastIndexOf('\n');
      where = ` at line ${line}, column ${column}`;
    }
    throw new SplitfleetError('INVALID_INPUT', `input: must be valid JSON${where}: ${message}`, { cause: e });
  }
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temp, text, { flag: 'wx' });
    await rename(temp, file);
  } catch (e) {
    await rm(temp, { force: true });
    const code = (e as { code?: unknown }).code;
    throw new Error(`--output: cannot write ${JSON.stringify(file)}: ${typeof code === 'string' ? code : reason(e)}`, { cause: e });
  }
}

function reason(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  const message = e instanceof Error ? e.message : String(e);
  return typeof code === 'string' && !message.startsWith(code) ? `${code}: ${message}` : message;
}
