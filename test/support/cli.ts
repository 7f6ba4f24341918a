/**
 * The built CLI (`dist/src/cli/main.js`) as a child process, for the tests
 * that act as an operator: its exit code and whole output, never colour, and
 * a hard kill after 40 s so a hung command fails its test instead of the run.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = join(fileURLToPath(new URL('../../', import.meta.url)), 'dist/src/cli/main.js');

export interface Ran { code: number | null; stdout: string; stderr: string }

/** Runs `splitfleet <args>` with `env` over the test's own environment. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const hard = setTimeout(() => child.kill('SIGKILL'), 40_000);
    child.on('close', (code) => {
      clearTimeout(hard);
      resolve({ code, stdout, stderr });
    });
  });
}
