/**
 * The examples run as a user would run them, against the built package
 * (`npm run build` first):
 * - examples/minimal.mjs: a custom planner and handler on the MemoryStore;
 * - examples/checksum/worker.mjs: two processes on a throwaway etcd checksum
 *   a temp directory (nested, a space in a name, an empty file, files of
 *   several chunks); every file's line must match node:crypto;
 * - examples/standing-fleet/: two serving processes, three jobs of two kinds
 *   submitted and awaited by a third; onFinished once per job, and a checksum
 *   job's parts (divided or not) cover each file once.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let etcd: EtcdHandle | undefined;
let dir = '';

interface Ran { code: number | null; stdout: string; stderr: string }

function run(script: string, args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, script), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(() => {
  if (!existsSync(join(root, 'dist/src/index.js'))) throw new Error('the examples import dist/src/index.js: run `npm run build` first');
  dir = mkdtempSync(join(tmpdir(), 'splitfleet-examples-'));
});

afterAll(async () => {
  await etcd?.stop();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe('examples', () => {
  test('minimal.mjs: a custom planner and handler on the MemoryStore', async () => {
    const r = await run('examples/minimal.mjs', []);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('verdicts: complete, complete, complete');
    expect(r.stdout).toContain('ranges completed: 24 of 24');
    expect(r.stdout).toContain('checked against the closed form: correct');
  });

  test('checksum/worker.mjs: two processes checksum a directory on etcd', async () => {
    etcd = await startEtcd();
    const data = join(dir, 'data');
    const chunk = 4096;
    const files: Record<string, Buffer> = {
      'a.bin': randomBytes(chunk * 7 + 123),
      'b.bin': randomBytes(chunk),
      'empty': Buffer.alloc(0),
      'nested/deeper/c.txt': Buffer.from('hello\n'),
      'nested/with space.bin': randomBytes(chunk * 30),
      'nested/d.bin': randomBytes(chunk * 3 - 1),
    };
    for (let i = 0; i < 14; i++) files[`many/f${i}.bin`] = randomBytes(500 * (i + 1));
    for (const [path, bytes] of Object.entries(files)) {
      mkdirSync(join(data, path, '..'), { recursive: true });
      writeFileSync(join(data, path), bytes);
    }
    const out = join(dir, 'sums.jsonl');
    const args = (instance: string) => [
      '--etcd', etcd!.endpoint, '--dir', data, '--out', out, '--instance', instance, '--chunk-bytes', String(chunk), '--lanes', '2',
    ];
    const [a, b] = await Promise.all([run('examples/checksum/worker.mjs', args('a')), run('examples/checksum/worker.mjs', args('b'))]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(a.stderr).toContain('job checksum complete');
    expect(b.stderr).toContain('job checksum complete');

    interface Line { path: string; size: number; chunkBytes: number; chunkSha256: string[]; treeSha256: string }
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Line);
    const byPath = new Map<string, Line>();
    for (const line of lines) {
      const seen = byPath.get(line.path);
      if (seen) expect(line).toEqual(seen); // at-least-once: a replay writes the same line
      byPath.set(line.path, line);
    }
    expect([...byPath.keys()].sort()).toEqual(Object.keys(files).sort());
    for (const [path, bytes] of Object.entries(files)) {
      const chunks: string[] = [];
      for (let at = 0; at < bytes.length; at += chunk) chunks.push(createHash('sha256').update(bytes.subarray(at, at + chunk)).digest('hex'));
      const tree = createHash('sha256');
      for (const c of chunks) tree.update(Buffer.from(c, 'hex'));
      expect(byPath.get(path), path).toEqual({ path, size: bytes.length, chunkBytes: chunk, chunkSha256: chunks, treeSha256: tree.digest('hex') });
      if (bytes.length > 0 && bytes.length <= chunk) expect(chunks[0]).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
  });

  test('standing-fleet: two serving processes, three jobs of two kinds submitted from a third, each awaited; onFinished once per job', async () => {
    etcd ??= await startEtcd();
    const data = join(dir, 'fleet');
    mkdirSync(data, { recursive: true });
    const words: Record<string, string> = { 'w1.txt': 'one two three', 'w2.txt': 'a b\nc d e\n', 'w3.txt': '' };
    for (const [f, t] of Object.entries(words)) writeFileSync(join(data, f), t);
    const big = randomBytes(3 * 1024 * 1024);
    writeFileSync(join(data, 'big.bin'), big);
    writeFileSync(join(data, 'small.bin'), randomBytes(1000));
    const out = join(dir, 'fleet.jsonl');
    const workers = ['a', 'b'].map((instance) => spawn(process.execPath, [join(root, 'examples/standing-fleet/worker.mjs'), '--etcd', etcd!.endpoint, '--instance', instance, '--out', out, '--lanes', '3'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] }));
    try {
      const submit = (job: string, kind: string, files: string[]) => run('examples/standing-fleet/submit.mjs', ['--etcd', etcd!.endpoint, '--job', job, '--kind', kind, ...files.map((f) => join(data, f))]);
      const results = await Promise.all([
        submit('wc-1', 'wordcount', ['w1.txt', 'w2.txt']),
        submit('wc-2', 'wordcount', ['w3.txt']),
        submit('sums', 'checksum', ['big.bin', 'small.bin']),
      ]);
      for (const r of results) {
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ verdict: 'complete' });
      }
      // onFinished lines come after the verdict, once per job: wait for the three.
      const lines = async () => readFileSync(out, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      for (let i = 0; i < 100 && (await lines()).filter((l) => l.finished).length < 3; i++) await new Promise((r) => setTimeout(r, 100));
      const all = await lines();
      expect(all.filter((l) => l.finished).map((l) => l.job).sort()).toEqual(['sums', 'wc-1', 'wc-2']);
      const count = (job: string, file: string) => all.find((l) => l.job === job && l.file === join(data, file))?.words;
      expect([count('wc-1', 'w1.txt'), count('wc-1', 'w2.txt'), count('wc-2', 'w3.txt')]).toEqual([3, 5, 0]);
      // Every part of every file hashes its own byte range, and the parts cover the file once.
      for (const [file, bytes] of [['big.bin', big], ['small.bin', readFileSync(join(data, 'small.bin'))]] as const) {
        const parts = all.filter((l) => l.job === 'sums' && l.file === join(data, file)) as { from: number; to: number; sha256: string; part: string }[];
        const byPart = new Map(parts.map((p) => [p.part, p])); // at-least-once: a replayed part writes the same line
        const sorted = [...byPart.values()].sort((x, y) => x.from - y.from);
        let at = 0;
        for (const p of sorted) {
          expect(p.from, `${file} ${p.part}`).toBe(at);
          expect(p.sha256).toBe(createHash('sha256').update(bytes.subarray(p.from, p.to)).digest('hex'));
          at = p.to;
        }
        expect(at).toBe(bytes.length);
      }
    } finally {
      for (const w of workers) w.kill('SIGTERM');
      await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(undefined) : w.on('close', r)))));
    }
  });
});
