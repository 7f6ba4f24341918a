/**
 * `new Metrics(options)` (issue 31): a registry passed in is registered into
 * and otherwise left alone (no default labels set on it); constant labels go
 * on splitfleet's own series only, and `job`/`instance` are refused
 * (Prometheus's target labels); `splitfleet_build_info`,
 * `splitfleet_lane_capacity`, `splitfleet_commits_total` and
 * `splitfleet_oldest_lane_age_seconds` are served; Node's default metrics
 * are collected only when asked, into this registry only.
 */
import { readFileSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Registry, register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../../src/coordinator/metrics.js';
import { VERSION } from '../../../src/version.js';

describe('Metrics options', () => {
  it("never mutates a registry passed in: its own series keep their labels, splitfleet's carry the constant ones", async () => {
    const registry = new Registry();
    const mine = new Counter({ name: 'host_requests_total', help: 'the host app\'s own', registers: [registry] });
    mine.inc();
    const m = new Metrics({ registry, labels: { splitfleet_job: 'backfill' } });
    m.completions.inc(2);
    m.storeCall('txn', 0.003);
    expect((registry as unknown as { _defaultLabels: object })._defaultLabels).toEqual({});
    const text = await registry.metrics();
    expect(text).toMatch(/^host_requests_total 1$/m);
    expect(text).toMatch(/^splitfleet_completions_total\{splitfleet_job="backfill"\} 2$/m);
    expect(text).toMatch(/^splitfleet_store_call_seconds_bucket\{le="0.005",splitfleet_job="backfill",call="txn"\} 1$/m);
    expect(text).toMatch(/^splitfleet_store_call_seconds_count\{splitfleet_job="backfill",call="txn"\} 1$/m);
    // The JSON form, as prom-client's own aggregations read it, carries them too.
    const json = await registry.getMetricsAsJSON();
    expect(json.find((x) => x.name === 'splitfleet_completions_total')!.values[0]!.labels).toEqual({ splitfleet_job: 'backfill' });
    expect(json.find((x) => x.name === 'host_requests_total')!.values[0]!.labels).toEqual({});
  });

  it('has no constant label by default', async () => {
    expect(await new Metrics().registry.metrics()).toMatch(/^splitfleet_completions_total 0$/m);
  });

  it('refuses job and instance (Prometheus target labels), its own label names and bad names, naming the label', () => {
    expect(() => new Metrics({ labels: { job: 'x' } })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/'job' is a Prometheus target label.*splitfleet_job/) }));
    expect(() => new Metrics({ labels: { instance: 'x' } })).toThrow(/'instance' is a Prometheus target label/);
    expect(() => new Metrics({ labels: { state: 'x' } })).toThrow(/'state' is a label splitfleet's own series carry/);
    expect(() => new Metrics({ labels: { '1x': 'x' } })).toThrow(/'1x' is not a Prometheus label name/);
    expect(() => new Metrics(new Registry() as never)).toThrow(/pass \{ registry \}/);
  });

  it('serves splitfleet_build_info with the package version, which is package.json\'s', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
    expect(await new Metrics().registry.metrics()).toContain(`splitfleet_build_info{version="${VERSION}"} 1`);
  });

  it('serves lane capacity, commits and the oldest lane age (read at each scrape from observeLanes)', async () => {
    const m = new Metrics();
    expect(await m.registry.metrics()).toMatch(/^splitfleet_oldest_lane_age_seconds 0$/m);
    m.laneCapacity.set(4);
    m.commits.inc();
    m.commits.inc();
    let age = 12.5;
    m.observeLanes(() => age);
    const text = await m.registry.metrics();
    expect(text).toMatch(/^splitfleet_lane_capacity 4$/m);
    expect(text).toMatch(/^splitfleet_commits_total 2$/m);
    expect(text).toMatch(/^splitfleet_oldest_lane_age_seconds 12.5$/m);
    age = 30;
    expect(await m.registry.metrics()).toMatch(/^splitfleet_oldest_lane_age_seconds 30$/m);
  });

  it("collects Node's default metrics only when asked, into its own registry, never prom-client's global one", async () => {
    expect(await new Metrics().registry.metrics()).not.toContain('process_cpu_user_seconds_total');
    const before = (await globalRegistry.getMetricsAsJSON()).length;
    const m = new Metrics({ defaultMetrics: true, labels: { splitfleet_job: 'j' } });
    const text = await m.registry.metrics();
    expect(text).toMatch(/^process_cpu_user_seconds_total\{splitfleet_job="j"\} /m);
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    expect((await globalRegistry.getMetricsAsJSON()).length).toBe(before);
    // A registry that has them already: a clear refusal, not prom-client's bare one.
    const has = new Registry();
    collectDefaultMetrics({ register: has });
    expect(() => new Metrics({ registry: has, defaultMetrics: true })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringContaining('defaultMetrics') }));
  });
});
