/**
 * The operator tools on a packed job (decision 0037), run as operators run
 * them (the compiled `splitfleet` bin in a child process) against a
 * throwaway etcd, after a fleet of in-process coordinators has finished the
 * job (so completed splits are folded back into their queue pages):
 * - `inspect` and `jobs` count every split, from the leader's summary and,
 *   with the summary gone, from the pages and folded bits;
 * - `inspect --splits` pages every split exactly once; `inspect --split ID`
 *   shows a folded split as completed (folded), found from its id alone;
 * - `delete` removes the job's queue pages and folded records with the rest,
 *   and nothing of a sibling job or of a job nested under its prefix.
 * Build first: `npm run build`. Needs etcd on PATH (never skipped).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { JobReport } from '../../src/inspect/report.js';
import type { SplitPage, SplitView } from '../../src/inspect/splits.js';
import type { JobSummary } from '../../src/operator/jobs.js';
import { jobPrefix, parseKey, summaryKey } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { runCli } from '../support/cli.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { writeSplitFixture } from '../support/split-fixture.js';

const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };
const N = 120;
const JOB = 'pk-ops';
const P = jobPrefix('splitfleet', JOB);
const clean = { SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: '', SPLITFLEET_ROOT: '' };

let etcd: EtcdHandle;
let admin: EtcdStore;
beforeAll(async () => {
  etcd = await startEtcd();
  admin = new EtcdStore({ endpoints: etcd.endpoint });
  const stores = [0, 1].map(() => new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 }));
  const ids = Array.from({ length: N }, (_, i) => `s-${String(i).padStart(3, '0')}`);
  const fleet = await Promise.all(stores.map((store, i) => startCoordinator({
    store, job: JOB, instance: `w${i}`, maxInFlight: 4, logger: silentLogger, layout: 'packed', ...fast,
    planner: () => ({ final: true, splits: ids.map((id, k) => ({ id, weight: 1 + (k % 4), descriptor: { k } })) }),
    handler: async (s) => s.complete(1),
  })));
  expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
  for (const c of fleet) await c.close();
  for (const s of stores) await s.close();
}, 90_000);
afterAll(async () => {
  await admin?.close();
  await etcd?.stop();
});

async function ok(...args: string[]): Promise<string> {
  const r = await runCli([...args, '--etcd', etcd.endpoint], clean);
  expect(r.stderr, `${args.join(' ')}: stderr`).toBe('');
  expect(r.code, `${args.join(' ')}: exit code`).toBe(0);
  return r.stdout;
}

describe('the operator tools on a finished packed job (real etcd, the CLI)', () => {
  it('inspect and jobs count every split, from the summary and, without it, from the pages', async () => {
    const report = JSON.parse(await ok('inspect', '--job', JOB, '--json')) as JobReport;
    expect(report.splits).toMatchObject({ completed: N, total: N });
    expect(report.plan).toMatchObject({ layout: 'packed', seeded: N });
    expect(await ok('inspect', '--job', JOB)).toMatch(/packed layout \(\d+ buckets?\)/);
    const listed = (JSON.parse(await ok('jobs', '--json')) as { jobs: JobSummary[] }).jobs.find((j) => j.job === JOB)!;
    expect(listed.splits).toEqual({ runnable: 0, completed: N, quarantined: 0, total: N });

    // Without the summary, jobs reads the pages and folded bits (never "0 splits").
    await admin.delete(summaryKey(P));
    const fallback = (JSON.parse(await ok('jobs', '--json')) as { jobs: JobSummary[] }).jobs.find((j) => j.job === JOB)!;
    expect(fallback.source).toMatchObject({ kind: 'records' });
    expect(fallback.splits).toEqual({ runnable: 0, completed: N, quarantined: 0, total: N });
    expect(await ok('jobs')).toMatch(/every split record and queue page/);
  });

  it('inspect --splits pages every split once; --split ID shows a folded one as completed (folded)', async () => {
    const seen: string[] = [];
    let folded: SplitView | undefined;
    let after: string | null = null;
    do {
      const page = JSON.parse(await ok('inspect', '--job', JOB, '--splits', '--limit', '50', '--json', ...(after !== null ? ['--after', after] : []))) as SplitPage;
      expect(page.layout).toBe('packed');
      for (const v of page.splits) {
        seen.push(v.id);
        expect(v.status, v.id).toBe('completed');
        if (v.page?.folded) folded ??= v;
      }
      after = page.next;
    } while (after !== null);
    expect(seen.length).toBe(N);
    expect(new Set(seen).size).toBe(N);
    expect(folded).toBeDefined();
    const text = await ok('inspect', '--job', JOB, '--split', folded!.id);
    expect(text).toMatch(/status\s+completed \(folded\)\n/);
    expect(text).toMatch(/queue page\s+queue\.\d+\.\d+, slot \d+, folded back as completed\n/);
    expect(text).toMatch(new RegExp(`descriptor\\s+\\{"k":${Number(folded!.id.slice(2))}\\}\\n`));
  });

  it('delete removes the pages and folded records, and nothing of a sibling or a nested job', async () => {
    await writeSplitFixture(admin, 'splitfleet', `${JOB}2`, 2);
    await writeSplitFixture(admin, `splitfleet/${JOB}`, 'queue.0', 2); // nested: its keys sort inside the job's queue range
    const all = async () => (await admin.listAll('splitfleet/')).kvs.map((kv) => kv.key);
    const before = await all();
    const own = before.filter((k) => k.startsWith(P) && !k.startsWith(`${P}queue.0/`));
    expect(own.some((k) => parseKey(P, k).kind === 'queue')).toBe(true);
    expect(own.some((k) => parseKey(P, k).kind === 'folded')).toBe(true);
    expect(await ok('delete', '--job', JOB, '--dry-run')).toMatch(new RegExp(`would delete ${own.length} keys .*folded \\d+.*queue \\d+`));
    expect(await ok('delete', '--job', JOB)).toMatch(new RegExp(`deleted ${own.length} keys \\(verdict complete\\)`));
    const after = await all();
    expect(after.sort()).toEqual(before.filter((k) => !own.includes(k)).sort());
    expect(after.some((k) => k.startsWith(`splitfleet/${JOB}2/`))).toBe(true);
    expect(after.some((k) => k.startsWith(`${P}queue.0/`))).toBe(true);
  });
});
