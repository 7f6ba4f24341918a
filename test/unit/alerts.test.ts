/**
 * docs/alerts.yml: its shape (a Prometheus rule file with the six documented
 * alerts, each with expr, for, severity, summary, description), and its
 * expressions evaluated against what real `Metrics` registries serve over a
 * simulated scrape timeline: the rules must fire in the failure and stay
 * quiet otherwise (a completion on any instance means the job moves).
 *
 * The file is read with the `yaml` package (any error or warning fails);
 * PromQL with test/support/prometheus.ts's deliberately small subset (no
 * promtool here). A scrape adds the target labels `job` and `instance`, as
 * Prometheus does; the rules group by `splitfleet_job`, the constant label.
 */
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/coordinator/metrics.js';
import { alertRules, backlog, Fleet, parsePromql, parseYaml } from '../support/prometheus.js';

// ---- the tests --------------------------------------------------------------------------------

const { file, rules } = alertRules();
const expr = (alert: string) => rules[alert]!.expr;

describe('docs/alerts.yml', () => {
  it('is a Prometheus rule file with the documented alerts, each complete', () => {
    expect(file.groups.map((g) => g.name)).toEqual(['splitfleet']);
    expect(Object.keys(rules).sort()).toEqual([
      'SplitfleetJobNotMoving', 'SplitfleetNoLeader', 'SplitfleetQuarantined', 'SplitfleetSessionLosses', 'SplitfleetSplitsParked', 'SplitfleetStoreErrors',
    ]);
    for (const r of Object.values(rules)) {
      expect(Object.keys(r).sort(), r.alert).toEqual(['alert', 'annotations', 'expr', 'for', 'labels']);
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['page', 'warning'], r.alert).toContain(r.labels.severity);
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(10);
      expect(r.annotations.description.length, r.alert).toBeGreaterThan(10);
      expect(() => parsePromql(r.expr), r.alert).not.toThrow();
    }
  });

  it('names only series a Metrics registry serves', async () => {
    const served = new Set((await new Metrics().registry.getMetricsAsJSON()).flatMap((m) =>
      m.type === 'histogram' ? [`${m.name}_count`, `${m.name}_sum`, `${m.name}_bucket`] : [m.name]));
    const named = (n: Node): string[] => {
      switch (n.kind) {
        case 'number': return [];
        case 'selector': return [n.name];
        case 'call': case 'aggregate': return named(n.arg);
        case 'binary': return [...named(n.left), ...named(n.right)];
      }
    };
    for (const r of Object.values(rules)) for (const name of named(parsePromql(r.expr))) expect(served, `${r.alert}: ${name}`).toContain(name);
  });

  it('the YAML reader refuses a broken file (so the shape check cannot pass by accident)', () => {
    expect(() => parseYaml('a: 1\na: 2\n')).toThrow(/unique/i);
    expect(() => parseYaml('a:\n  b: 1\n   c: 2\n')).toThrow();
    expect(parseYaml('a:\n  - b: "x: y"\n    c: |\n      one\n        two\n')).toEqual({ a: [{ b: 'x: y', c: 'one\n  two\n' }] });
  });

  it('groups by splitfleet_job, never by job (Prometheus\'s own target label)', () => {
    for (const r of Object.values(rules)) {
      expect(r.expr, r.alert).toMatch(/by \(splitfleet_job\b/);
      expect(r.expr, r.alert).not.toMatch(/\bjob\b/);
      expect(r.annotations.summary, r.alert).not.toContain('$labels.job ');
    }
  });

  describe('SplitfleetJobNotMoving', () => {
    it('stays quiet while any instance completes, even when the leader itself completes nothing', async () => {
      const fleet = new Fleet(['pod-a', 'pod-b']);
      const { 'pod-a': leader, 'pod-b': worker } = fleet.members;
      await fleet.run(10, (k) => {
        leader!.isLeader.set(1);
        leader!.setBacklog(backlog({ queued: 20 - k, running: 4, completed: k }));
        worker!.completions.inc(); // one a minute, on pod-b only
      });
      expect(fleet.fires(expr('SplitfleetJobNotMoving'))).toEqual([]);
      // Per instance, the leader would look stuck: the sum over instances is what keeps it quiet.
      expect(fleet.fires('max by (splitfleet_job, instance) (splitfleet_backlog_splits{state="queued"}) > 0 and on (splitfleet_job, instance) rate(splitfleet_completions_total[5m]) == 0')).toEqual([{ splitfleet_job: 'backfill', instance: 'pod-a' }]);
    });

    it('fires when work is left and no instance completed anything for five minutes', async () => {
      const fleet = new Fleet(['pod-a', 'pod-b']);
      const { 'pod-a': leader, 'pod-b': worker } = fleet.members;
      await fleet.run(12, (k) => {
        leader!.setBacklog(backlog({ queued: 10, running: 4, completed: Math.min(k, 5) }));
        if (k < 5) worker!.completions.inc(); // then it stops: handlers hang
      });
      expect(fleet.fires(expr('SplitfleetJobNotMoving'))).toEqual([{ splitfleet_job: 'backfill' }]);
    });

    it('fires when only running splits are left (hung handlers), and not when the job is done', async () => {
      const hung = new Fleet(['pod-a']);
      await hung.run(8, () => hung.members['pod-a']!.setBacklog(backlog({ running: 3, completed: 9 })));
      expect(hung.fires(expr('SplitfleetJobNotMoving'))).toEqual([{ splitfleet_job: 'backfill' }]);

      const done = new Fleet(['pod-a']);
      await done.run(8, () => done.members['pod-a']!.setBacklog(backlog({ completed: 12 })));
      expect(done.fires(expr('SplitfleetJobNotMoving'))).toEqual([]);
    });

    it('counts only the current leader\'s backlog after a handover (the old one cleared its own)', async () => {
      const fleet = new Fleet(['pod-a', 'pod-b']);
      const { 'pod-a': a, 'pod-b': b } = fleet.members;
      await fleet.run(8, (k) => {
        if (k < 3) {
          a!.setBacklog(backlog({ queued: 5 }));
        } else {
          a!.clearBacklog(); // deposed
          b!.setBacklog(backlog({ completed: 5 }));
        }
        if (k < 3) b!.completions.inc();
      });
      // The job is done in the new leader's view; a stale queued 5 from pod-a would have fired.
      expect(fleet.fires(expr('SplitfleetJobNotMoving'))).toEqual([]);
    });
  });

  it('SplitfleetQuarantined fires on a quarantined split in the leader\'s backlog', async () => {
    const fleet = new Fleet(['pod-a']);
    await fleet.run(2, (k) => fleet.members['pod-a']!.setBacklog(backlog({ queued: 3, quarantined: k })));
    expect(fleet.fires(expr('SplitfleetQuarantined'))).toEqual([{ splitfleet_job: 'backfill' }]);
    const clean = new Fleet(['pod-a']);
    await clean.run(2, () => clean.members['pod-a']!.setBacklog(backlog({ queued: 3 })));
    expect(clean.fires(expr('SplitfleetQuarantined'))).toEqual([]);
  });

  it('SplitfleetSplitsParked fires once splits stay parked five minutes, and not on a moment\'s', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(7, () => fleet.members['pod-a']!.parked.set(2));
    expect(fleet.fires(expr('SplitfleetSplitsParked'))).toEqual([{ splitfleet_job: 'backfill' }]);
    const blip = new Fleet(['pod-a']);
    await blip.run(7, (k) => blip.members['pod-a']!.parked.set(k === 2 ? 1 : 0));
    expect(blip.fires(expr('SplitfleetSplitsParked'))).toEqual([]);
  });

  it('SplitfleetSessionLosses names the instance that lost its session', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(6, (k) => {
      if (k === 3) fleet.members['pod-b']!.sessionLosses.inc();
    });
    expect(fleet.fires(expr('SplitfleetSessionLosses'))).toEqual([{ splitfleet_job: 'backfill', instance: 'pod-b' }]);
  });

  it('SplitfleetStoreErrors fires above 5% failing calls and ignores CLOSED at shutdown', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(6, () => {
      for (let n = 0; n < 100; n++) {
        fleet.members['pod-a']!.storeCall('txn', 0.002);
        fleet.members['pod-b']!.storeCall('txn', 0.002);
      }
      for (let n = 0; n < 10; n++) fleet.members['pod-a']!.storeError('txn', 'STORE_UNAVAILABLE');
      for (let n = 0; n < 50; n++) fleet.members['pod-b']!.storeError('get', 'CLOSED');
    });
    expect(fleet.fires(expr('SplitfleetStoreErrors'))).toEqual([{ splitfleet_job: 'backfill', instance: 'pod-a' }]);
  });

  it('SplitfleetNoLeader fires while no instance leads, not while one does', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(3, () => undefined);
    expect(fleet.fires(expr('SplitfleetNoLeader'))).toEqual([{ splitfleet_job: 'backfill' }]);
    await fleet.run(1, () => fleet.members['pod-b']!.isLeader.set(1));
    expect(fleet.fires(expr('SplitfleetNoLeader'))).toEqual([]);
  });
});
