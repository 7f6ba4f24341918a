/**
 * The live dashboard (`splitfleet inspect --serve`) in a real headless
 * browser, watching a real demo job on a throwaway etcd:
 * - started before the job exists, the page says it is waiting, then lists
 *   the demo's members as they join;
 * - when the demo SIGKILLs a worker, the page updates by itself: the
 *   worker's row stops being live, the log shows it leaving and its splits
 *   moving away from it;
 * - the poisoned split appears under Quarantined with its reason, and the
 *   verdict `stalled` appears when the job ends;
 * - the server answers only GET, and only to loopback Host names;
 * - without --job, the job list: kinds, states, progress; with --actions, says so;
 * - the list links each job's page, which finds a split by id (kept in the
 *   address) and, with actions enabled, pauses, resumes and retries.
 * A screenshot taken mid-run is written to docs/dashboard.png, one of the
 * job list to docs/dashboard-jobs.png.
 *
 * Needs etcd and chromium (Debian's, at /usr/bin/chromium, or `chromium` on
 * PATH; CHROMIUM_PATH overrides); either missing is a failure, never a skip.
 * Runs the compiled CLI: build first (`npm run build`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { serveDashboard } from '../../src/dashboard/serve.js';
import { jobPrefix, leaderKey, planKey, summaryKey, workerKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { summaryRecord } from '../../src/protocol/summary.js';
import { MemoryStore } from '../../src/store/memory.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { writeJobs } from './jobs-fixture.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(root, 'dist/src/cli/main.js');
const SCREENSHOT = join(root, 'docs/dashboard.png');
const LIST_SCREENSHOT = join(root, 'docs/dashboard-jobs.png');
// Each run has its own etcd, so a fixed name cannot collide; it is the name the screenshot shows.
const JOB = 'demo-dashboard';
const WAIT = 90_000;

/** Finds chromium or fails with instructions (never a skip: CI must install it). */
function findChromium(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'];
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir) candidates.push(join(dir, 'chromium'), join(dir, 'chromium-browser'));
  }
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  const where = process.env.CI === 'true' || process.env.CI === '1' ? 'CI must install it' : 'install it locally';
  throw new Error(`the dashboard test needs chromium and it was not found: ${where} ('apt-get install chromium', or set CHROMIUM_PATH). `
    + 'This test is never skipped.');
}

interface Running { child: ChildProcess; stdout: () => string; exited: Promise<number | null> }

function run(args: string[]): Running {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => {
    if (code !== 0 && err) process.stderr.write(`[${args[0]}] ${err}`);
    resolve(code);
  }));
  return { child, stdout: () => out, exited };
}

/** Resolves with the first match of `pattern` in the process's stdout; rejects if it exits first. */
async function waitForOutput(p: Running, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  let exited = false;
  void p.exited.then(() => (exited = true));
  const deadline = Date.now() + WAIT;
  for (;;) {
    const m = pattern.exec(p.stdout());
    if (m) return m;
    if (exited) throw new Error(`exited before printing ${what}; stdout:\n${p.stdout()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} after ${WAIT / 1000} s; stdout:\n${p.stdout()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One raw HTTP request (fetch will not send a Host header of our choosing). */
function raw(url: string, method: string, host?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: host ? { host } : {} }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const texts = (page: Page, selector: string) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent ?? ''));

let etcd: EtcdHandle | undefined;
let browser: Browser | undefined;
let dashboard: Running | undefined;
let demo: Running | undefined;

beforeAll(async () => {
  const executablePath = findChromium();
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run 'npm run build' first`);
  etcd = await startEtcd();
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  demo?.child.kill('SIGKILL');
  dashboard?.child.kill('SIGKILL');
  await browser?.close();
  await etcd?.stop();
});

describe('splitfleet inspect --serve', () => {
  test('shows a demo job live: members, a killed worker leaving and its splits moving, a quarantined split with its reason', async () => {
    dashboard = run(['inspect', '--etcd', etcd!.endpoint, '--job', JOB, '--serve', '0']);
    const url = (await waitForOutput(dashboard, /at (http:\/\/127\.0\.0\.1:\d+\/)/, 'the dashboard URL'))[1]!;

    // Read-only and loopback-only, before anything else runs.
    expect(await raw(`${url}api/state`, 'POST')).toBe(404);
    expect(await raw(url, 'GET', 'attacker.example')).toBe(421);
    expect(await raw(url, 'GET')).toBe(200);

    const page = await browser!.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(url);
    await page.waitForSelector('#conn', { timeout: WAIT });
    expect(await page.textContent('#banners')).toContain('waiting for the job to appear');

    // 3 workers × 2 lanes, 40 splits at 5 units/s per lane: about 20 s of work. w1 or another non-leader is killed at 25 %.
    demo = run([
      'demo', '--etcd', etcd!.endpoint, '--job', JOB, '--workers', '3', '--lanes', '2', '--splits', '40', '--rate', '5',
      '--kill', '1', '--join', '1', '--poison', '1', '--plain', '--json', '--timeout', '120',
    ]);

    // Members listed, live, as they join.
    await page.waitForFunction(() => document.querySelectorAll('tr[data-member][data-live="true"]').length >= 3, undefined, { timeout: WAIT });
    const members = await page.$$eval('tr[data-member]', (rows) => rows.map((r) => r.getAttribute('data-member')));
    expect(members).toEqual(expect.arrayContaining(['w1', 'w2', 'w3']));
    expect(await page.textContent('#job')).toBe(`job ${JOB}`);

    // The kill: the page learns it from the watch alone.
    const victim = (await waitForOutput(demo, /chaos\s+SIGKILL (w\d+)/, 'the kill'))[1]!;
    // Its row stops being live: marked gone while a record still names it, then dropped once nothing does.
    await page.waitForFunction(
      (v) => document.querySelector(`tr[data-member="${v}"][data-live="true"]`) === null, victim, { timeout: WAIT },
    );
    await page.waitForFunction(
      (v) => [...document.querySelectorAll('#log li[data-kind="move"]')].some((li) => li.textContent!.includes(`moved ${v} (gone) →`)),
      victim, { timeout: WAIT },
    );
    const leaves = await texts(page, '#log li[data-kind="leave"]');
    expect(leaves.some((t) => t.includes(`${victim} left`))).toBe(true);

    // The poisoned split, with the reason its handler gave.
    await page.waitForSelector('#quarantined-body tr[data-split]', { timeout: WAIT });
    const reasons = await texts(page, '#quarantined-body tr[data-split] td.reason');
    expect(reasons).toEqual([expect.stringContaining('poisoned')]);
    const logged = await texts(page, '#log li[data-kind="quarantine"]');
    expect(logged.some((t) => t.includes('poisoned'))).toBe(true);

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The end: the demo stalls on the quarantined split, and the page says so.
    const code = await demo.exited;
    expect(code).toBe(1);
    const summary = JSON.parse(demo.stdout().trim().split('\n').pop()!) as { quarantined: number; lost: number; verdict: string };
    expect(summary).toMatchObject({ quarantined: 1, lost: 0, verdict: 'stalled' });
    await page.waitForSelector('[data-verdict="stalled"]', { timeout: WAIT });
    expect(errors).toEqual([]);

    dashboard.child.kill('SIGINT');
    expect(await dashboard.exited).toBe(0);
  }, 240_000);

  test('shows a paused job and its evacuated instances (the operators\' control record)', async () => {
    const store = new MemoryStore();
    const P = jobPrefix('splitfleet', 'ops');
    const stamp = { v: SCHEMA_VERSION, fp: fingerprintHash(defaultFingerprint('splitfleet', 'ops')) };
    // Raw JSON rather than this build's encoder: the page must render whatever the report carries.
    await store.put(`${P}worker.a`, JSON.stringify({ ...stamp, instance: 'a', maxInFlight: 2, nonce: 'run-1' }));
    await store.put(`${P}worker.b`, JSON.stringify({ ...stamp, instance: 'b', maxInFlight: 2, nonce: 'run-1' }));
    await store.put(`${P}control`, JSON.stringify({ ...stamp, paused: true, evacuated: [{ instance: 'a', nonce: 'run-1' }] }));
    const served = await serveDashboard({ store, job: 'ops', refreshMs: 50 });
    const page = await browser!.newPage();
    try {
      await page.goto(served.url);
      await page.waitForSelector('tr[data-member="b"]', { timeout: WAIT });
      const report = served.view().report as unknown as { paused?: unknown; evacuated?: unknown };
      if (report.paused === undefined) throw new Error('this build\'s JobReport has no `paused`: the control record is not read');
      expect(await page.textContent('#paused')).toBe('paused');
      expect(await page.textContent('#evacuated')).toBe('evacuated: a');
      expect(await page.textContent('tr[data-member="a"]')).toContain('evacuated');
      expect(await page.textContent('tr[data-member="b"]')).not.toContain('evacuated');
    } finally {
      await page.close();
      await served.close();
      await store.close();
    }
  });

  test('follows a job larger than followRecordsUpTo by its summary only, and says so (decision 0042)', async () => {
    const store = new MemoryStore();
    const P = jobPrefix('splitfleet', 'big');
    const fp = fingerprintHash(defaultFingerprint('splitfleet', 'big'));
    const v = SCHEMA_VERSION;
    // A job whose leader's summary counts 300k splits; not one split record is stored, and none is needed.
    await store.put(planKey(P), encodeRecord('plan', { v, fp, generation: 3, final: true, planned: 300_000 }));
    await store.put(leaderKey(P), encodeRecord('leader', { v, fp, instance: 'a', generation: 3 }));
    await store.put(workerKey(P, 'a'), encodeRecord('worker', { v, fp, instance: 'a', maxInFlight: 4, nonce: 'n' }));
    const t = (splits: number) => ({ splits, weight: splits * 10 });
    await store.put(summaryKey(P), encodeRecord('summary', summaryRecord({
      fp, generation: 3, writtenAt: Date.now(), plan: { planned: 300_000, final: true }, seeded: 300_000,
      queued: t(199_996), backoff: t(0), running: t(4), draining: t(0), completed: t(100_000), quarantined: t(0), parked: 0, lanes: [4],
    })));
    const served = await serveDashboard({ store, job: 'big', refreshMs: 50, followRecordsUpTo: 200_000 });
    const page = await browser!.newPage();
    try {
      await page.goto(served.url);
      await page.waitForSelector('#source', { timeout: WAIT });
      expect(await page.textContent('#source')).toContain('followed by its summary only');
      expect(await page.textContent('#conn')).toBe('live');
      expect(served.view().source).toMatchObject({ kind: 'summary', generation: 3, followsRecords: false });
      expect(served.view().report.splits.total).toBe(300_000);
    } finally {
      await page.close();
      await served.close();
      await store.close();
    }
  });

  test('without --job: the job list of the root, with the demo job stalled (--actions says so)', async () => {
    const listing = run(['inspect', '--etcd', etcd!.endpoint, '--serve', '0', '--actions']);
    try {
      const line = (await waitForOutput(listing, /dashboard of the jobs under splitfleet\/ at (http:\/\/127\.0\.0\.1:\d+\/) \(with pause, resume and retry/, 'the list URL'));
      const jobs = await (await fetch(`${line[1]!}api/jobs`)).json() as { jobs: { job: string; state: string; kind: string | null }[] };
      expect(jobs.jobs.find((j) => j.job === JOB)).toMatchObject({ state: 'stalled', kind: null });
      expect(await raw(line[1]!, 'GET', 'attacker.example')).toBe(421);
    } finally {
      listing.child.kill('SIGINT');
      expect(await listing.exited).toBe(0);
    }
  });

  test('the job list links each job; a job\'s page finds a split and, with actions, pauses, resumes and retries', async () => {
    const store = new MemoryStore();
    await writeJobs(store);
    const served = await serveDashboard({ store, refreshMs: 50, listRefreshMs: 100, actions: true });
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    try {
      await page.goto(served.url);
      await page.waitForSelector('tr[data-job="gamma"]', { timeout: WAIT });
      const rows = await page.$$eval('tr[data-job]', (trs) => trs.map((tr) => [
        tr.getAttribute('data-job'), tr.querySelector('.kind')!.textContent, tr.getAttribute('data-state'), tr.querySelector('.done')!.textContent,
      ]));
      expect(rows).toEqual([['alpha', '–', 'running', '1 / 3'], ['beta', 'export', 'submitted', '0 / 0'], ['gamma', 'report', 'paused', '0 / 2']]);
      await page.screenshot({ path: LIST_SCREENSHOT });

      await page.click('tr[data-job="alpha"] a');
      await page.waitForSelector('tr[data-member="w1"]', { timeout: WAIT });
      expect(new URL(page.url()).pathname).toBe('/job/alpha/');
      expect(await page.textContent('#job')).toBe('job alpha');

      // One split by id; the search is kept in the address, so a reload shows it again.
      await page.fill('#split-id', 's2');
      await page.click('#split-form button');
      await page.waitForSelector('#split-result tr[data-field="status"]', { timeout: WAIT });
      expect(await page.textContent('#split-result tr[data-field="status"]')).toContain('quarantined');
      expect(await page.textContent('#split-result tr[data-field="reason"]')).toContain('poisoned: bad row 7');
      expect(new URL(page.url()).search).toBe('?split=s2');
      await page.reload();
      await page.waitForSelector('#split-result tr[data-field="status"]', { timeout: WAIT });
      await page.fill('#split-id', 'nope');
      await page.click('#split-form button');
      await page.waitForSelector('#split-missing', { timeout: WAIT });
      expect(await page.textContent('#split-missing')).toBe('job alpha has no split "nope"');
      // The one console line so far: the browser's own for that 404.
      expect(errors).toEqual([expect.stringContaining('status of 404')]);
      errors.length = 0;

      // The actions, through the page's buttons; the watch shows what they did.
      await page.click('#pause');
      await page.waitForSelector('#paused', { timeout: WAIT });
      expect(await page.textContent('#action-result')).toBe('pause: paused');
      await page.click('#resume');
      await page.waitForFunction(() => document.querySelector('#paused') === null, undefined, { timeout: WAIT });
      await page.click('#quarantined-body button[data-retry="s2"]');
      await page.waitForFunction(() => document.querySelector('#quarantined-body tr[data-split]') === null, undefined, { timeout: WAIT });
      expect(await page.textContent('#action-result')).toBe('retry: retried 1 split(s)');

      await page.click('#all-jobs');
      await page.waitForSelector('tr[data-job="alpha"][data-state="running"]', { timeout: WAIT });
      expect(new URL(page.url()).pathname).toBe('/jobs/');
      expect(await page.getAttribute('tr[data-job="beta"] a', 'href')).toBe('../job/beta/');
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await served.close();
      await store.close();
    }
  });
});
