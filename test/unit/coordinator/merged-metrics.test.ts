/**
 * One exposition of several registries (merged-metrics.ts, decision 0068): two
 * jobs' `Metrics`, labelled by job, merge into one family per name (HELP and
 * TYPE once), with every sample of both under its own family; the caller's
 * extra family goes first; nothing is lost or duplicated.
 */
import { describe, expect, it } from 'vitest';
import { mergedSource, mergeExpositions } from '../../../src/coordinator/merged-metrics.js';
import { Metrics } from '../../../src/coordinator/metrics.js';

/** Every sample line with the family (the last `# TYPE` name) it sits under. */
function samples(text: string): { family: string; line: string }[] {
  let family = '';
  const out: { family: string; line: string }[] = [];
  for (const line of text.split('\n')) {
    const t = /^# TYPE (\S+) /.exec(line);
    if (t) family = t[1]!;
    else if (line !== '' && !line.startsWith('#')) out.push({ family, line });
  }
  return out;
}

describe('mergeExpositions', () => {
  it("two jobs' registries: one HELP and TYPE per name, every sample kept under its family", async () => {
    const a = new Metrics({ labels: { splitfleet_job: 'a' } });
    const b = new Metrics({ labels: { splitfleet_job: 'b' } });
    a.lanes.set(3);
    b.lanes.set(2);
    a.claims.inc({ kind: 'create', outcome: 'won' });
    b.decisionSeconds.observe(0.02);
    const [ta, tb] = [await a.registry.metrics(), await b.registry.metrics()];
    const merged = mergeExpositions([ta, tb]);
    const helps = merged.split('\n').filter((l) => l.startsWith('# HELP ')).map((l) => l.split(' ')[2]);
    expect(new Set(helps).size).toBe(helps.length);
    expect(merged.match(/^# TYPE splitfleet_lanes gauge$/gm)).toHaveLength(1);
    expect(merged).toContain('splitfleet_lanes{splitfleet_job="a"} 3');
    expect(merged).toContain('splitfleet_lanes{splitfleet_job="b"} 2');
    expect(merged).toContain('splitfleet_claims_total{splitfleet_job="a",kind="create",outcome="won"} 1');
    expect(merged).toContain('splitfleet_decision_seconds_count{splitfleet_job="b"} 1');
    // Exactly the samples of both, each under the family it came under.
    const expected = [...samples(ta), ...samples(tb)];
    const got = samples(merged);
    expect(got).toHaveLength(expected.length);
    expect(new Set(got.map((s) => `${s.family} ${s.line}`))).toEqual(new Set(expected.map((s) => `${s.family} ${s.line}`)));
    for (const s of got) expect(s.line.startsWith(s.family)).toBe(true);
  });

  it('keeps an untyped sample, skips comments, and is empty for nothing', () => {
    expect(mergeExpositions([])).toBe('');
    expect(mergeExpositions(['', '# a comment\n'])).toBe('');
    expect(mergeExpositions(['x_total 1\n', '# HELP x_total X.\n# TYPE x_total counter\nx_total{a="1"} 2\n'])).toBe('# HELP x_total X.\n# TYPE x_total counter\nx_total 1\nx_total{a="1"} 2\n');
  });

  it('mergedSource reads its sources at each scrape, its extra family first', async () => {
    const m = new Metrics({ labels: { splitfleet_job: 'a' } });
    let sources = [m.registry];
    let n = 1;
    const source = mergedSource(() => sources, () => `# HELP x_jobs Jobs.\n# TYPE x_jobs gauge\nx_jobs ${n}\n`);
    expect(source.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const first = await source.metrics();
    expect(first.startsWith('# HELP x_jobs Jobs.\n# TYPE x_jobs gauge\nx_jobs 1\n\n')).toBe(true);
    expect(first).toContain('splitfleet_lanes{splitfleet_job="a"} 0');
    sources = [];
    n = 0;
    expect(await source.metrics()).toBe('# HELP x_jobs Jobs.\n# TYPE x_jobs gauge\nx_jobs 0\n');
  });
});
