/**
 * bench:peers (issue 33): the figures' arithmetic on hand-made worker lines,
 * and a smoke run of the compiled `--quick` bench (its own etcd and
 * redis-server, every system and scenario) that checks the harness and the
 * JSON summary's shape, never a speed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import type { PeerLine } from '../../bench/peers/items.js';
import { measure } from '../../bench/peers/measure.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('measure counts duplicates, redone units, stale and refused writes, lost units and the recovery', () => {
  const items = [{ id: 'a', units: 4 }, { id: 'b', units: 2 }];
  const L = (t: number, w: string, ev: PeerLine['ev'], extra: Partial<PeerLine> = {}): PeerLine => ({ t, w, ev, n: 1, ...extra });
  const lines: PeerLine[] = [
    L(1000, 'w0', 'start', { id: 'a', from: 0 }),
    L(1010, 'w0', 'unit', { id: 'a', u: 1 }),
    L(1020, 'w0', 'unit', { id: 'a', u: 2 }),
    L(1021, 'w0', 'commit', { id: 'a', u: 2, ok: true }),
    L(1030, 'w0', 'unit', { id: 'a', u: 3 }),
    // w0 stalls at 1040; w1 takes a over from scratch (as a queue without resume would)
    L(1100, 'w1', 'start', { id: 'a', from: 0 }),
    L(1110, 'w1', 'unit', { id: 'a', u: 1 }), // redone: progress 2 was committed
    L(1120, 'w1', 'unit', { id: 'a', u: 2 }), // redone
    L(1130, 'w1', 'unit', { id: 'a', u: 3 }), // duplicate, not redone (3 was never committed)
    L(1140, 'w1', 'unit', { id: 'a', u: 4 }),
    L(1150, 'w0', 'commit', { id: 'a', u: 3, ok: true, s: 1145 }), // the stale worker's write landed
    L(1151, 'w0', 'commit', { id: 'a', u: 3, ok: false, s: 1146 }), // … and one was refused
    L(1152, 'w0', 'commit', { id: 'a', u: 2, ok: true, s: 1035 }), // sent before w1 started, answered after: not stale
    L(1160, 'w1', 'done', { id: 'a', ok: true }),
    L(1000, 'w2', 'start', { id: 'b', from: 0 }),
    L(1010, 'w2', 'unit', { id: 'b', u: 1 }), // unit 2 of b is never processed: lost
    L(1500, 'w2', 'done', { id: 'b', ok: true }),
  ];
  const f = measure(lines, { items, lanes: 2, unitMs: 10, t0: 1000, fault: { worker: 'w0', at: 1040 } });
  expect(f).toMatchObject({ complete: true, duplicates: 3, redoneUnits: 2, staleWrites: 1, refusedWrites: 1, lost: 1, recoveryMs: 70, makespanMs: 500, firstUnitMs: 10 });
  // bound: max(6 units × 10 ms / 2 lanes, 4 × 10 ms) = 40 ms; 5 distinct units of 10 ms over 2 lanes × 500 ms
  expect(f.lowerBoundMs).toBe(40);
  expect(f.utilisation).toBeCloseTo(50 / 1000);
});

test('a completion the store holds but whose line a SIGKILL cut off counts as done at its last unit', () => {
  const lines: PeerLine[] = [
    { t: 100, w: 'w0', ev: 'start', id: 'a', from: 0, n: 1 },
    { t: 150, w: 'w0', ev: 'unit', id: 'a', u: 1, n: 1 },
  ];
  const shape = { items: [{ id: 'a', units: 1 }], lanes: 1, unitMs: 10, t0: 100 };
  expect(measure(lines, shape)).toMatchObject({ complete: false, doneLinesMissing: 0 });
  expect(measure(lines, { ...shape, storeDone: true })).toMatchObject({ complete: true, doneLinesMissing: 1, makespanMs: 50 });
});

test('bench:peers --quick runs every system through every scenario and writes the JSON summary', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'splitfleet-peers-'));
  try {
    const file = join(dir, 'peers.json');
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'dist/bench/peers/run.js'), '--quick', '--json', file], { cwd: root, timeout: 170_000, maxBuffer: 1 << 24 });
    for (const name of ['skewed', 'kill', 'stall', 'join', 'tiny']) expect(stdout).toContain(`\n${name}: `);
    const summary = JSON.parse(readFileSync(file, 'utf8')) as {
      quick: boolean; loadAverage: { start: number[]; end: number[] };
      scenarios: Record<string, Record<string, Record<string, unknown>>>;
    };
    expect(summary.quick).toBe(true);
    expect(summary.loadAverage.start).toHaveLength(3);
    expect(summary.loadAverage.end).toHaveLength(3);
    expect(Object.keys(summary.scenarios).sort()).toEqual(['join', 'kill', 'skewed', 'stall', 'tiny']);
    for (const [name, bySystem] of Object.entries(summary.scenarios)) {
      expect(Object.keys(bySystem).sort(), name).toEqual(['bullmq', 'redis-locks', 'splitfleet']);
      for (const [system, f] of Object.entries(bySystem)) {
        const at = `${name}/${system}`;
        for (const k of ['makespanRatio', 'utilisation', 'lost', 'duplicates', 'redoneUnits', 'staleWrites', 'itemsPerSecond']) {
          expect(typeof f[k], `${at}.${k}`).toBe('number');
          expect(Number.isFinite(f[k]), `${at}.${k}`).toBe(true);
        }
        // Every system finished the job: each worker ran as a process and every item completed.
        expect(f.complete, at).toBe(true);
        expect(f.itemsPerSecond as number, at).toBeGreaterThan(0);
      }
    }
    // The fault scenarios saw their fault: a killed or stalled worker's items ran elsewhere, the joiner worked.
    for (const system of ['splitfleet', 'bullmq', 'redis-locks']) {
      expect(summary.scenarios.kill![system]!.recoveryMs, system).toBeGreaterThan(0);
      expect(summary.scenarios.join![system]!.joinerUnits, system).toBeGreaterThan(0);
    }
    // splitfleet fences: nothing a stale worker wrote may land.
    expect(summary.scenarios.stall!.splitfleet!.staleWrites).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);
