/**
 * run() ends on a real SIGTERM (issue 31 item 3): a child process from the
 * compiled package (test/fixtures/run-signal.mjs) holds its splits, gets
 * SIGTERM from this test, drains them, prints what run() resolved with and
 * exits 0 by itself (its listeners gone, nothing keeps it alive: no
 * process.exit in the fixture).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { within } from '../support/wait.js';

const fixture = fileURLToPath(new URL('../fixtures/run-signal.mjs', import.meta.url));

describe('run() in a process', () => {
  test("SIGTERM stops it gracefully: outcome 'stopped', the lanes drained, exit 0", async () => {
    const child = spawn(process.execPath, [fixture], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await within('the child to hold its splits', new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d;
        if (out.includes('ready\n')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`exited ${code} before ready: ${err}`)));
    }), 20_000);
    child.kill('SIGTERM');
    const code = await within('the child to exit after SIGTERM', exited, 20_000);
    const last = out.trim().split('\n').at(-1)!;
    expect({ code, result: JSON.parse(last), err }).toEqual({
      code: 0, result: { outcome: 'stopped', signal: 'SIGTERM', forced: false, drained: ['a', 'b'] }, err: '',
    });
  }, 45_000);
});
