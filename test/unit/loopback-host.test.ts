/**
 * DNS-rebinding protection shared by the dashboard and the metrics server
 * (issue 28): bound to loopback, only a loopback Host is answered (421
 * otherwise, saying why); bound elsewhere, no check. The metrics server had
 * no check before: a page whose name resolved to 127.0.0.1 could read
 * /metrics and /readyz. An IPv4-mapped loopback address (`::ffff:127.0.0.1`)
 * is loopback too (decision 0051): bound to one, the check applies (it was
 * skipped), and named in the Host, in any of its spellings, it passes.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import { Metrics } from '../../src/coordinator/metrics.js';
import { hostnameOf, isLoopback, refusedHost } from '../../src/loopback-host.js';
import { serveMetrics, type MetricsServer } from '../../src/metrics-server.js';

function get(url: string, host?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: host ? { host } : {} }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const open: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

describe('refusedHost', () => {
  test('bound to loopback: loopback names pass, any other is refused with the reason', () => {
    for (const h of ['localhost:9100', '127.0.0.1:9100', '127.1.2.3', '[::1]:9100', 'LOCALHOST']) expect(refusedHost('127.0.0.1', h), h).toBeUndefined();
    expect(refusedHost('127.0.0.1', 'rebind.example:9100')).toMatch(/Host "rebind.example" is not a loopback name/);
    expect(refusedHost('::1', 'evil.example')).toBeDefined();
    expect(refusedHost('localhost', undefined)).toBeDefined();
  });

  test('bound elsewhere: no check', () => {
    expect(refusedHost('0.0.0.0', 'metrics.internal:9100')).toBeUndefined();
    expect(refusedHost('10.0.0.5', 'anything')).toBeUndefined();
  });

  test('hostnameOf and isLoopback', () => {
    expect(hostnameOf('[::1]:80')).toBe('[::1]');
    expect(hostnameOf('a.example:80')).toBe('a.example');
    expect(hostnameOf('a.example')).toBe('a.example');
    expect(isLoopback('127.0.0.9')).toBe(true);
    expect(isLoopback('128.0.0.1')).toBe(false);
  });
});

describe('IPv4-mapped loopback addresses are loopback', () => {
  test('every spelling of ::ffff:127.x.y.z (and of ::1), bracketed or not; no other mapped address', () => {
    for (const name of ['::ffff:127.0.0.1', '[::ffff:127.0.0.1]', '::FFFF:127.1.2.3', '::ffff:7f00:1', '[::ffff:7f01:203]', '0:0:0:0:0:ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) {
      expect(isLoopback(name), name).toBe(true);
    }
    for (const name of ['::ffff:128.0.0.1', '::ffff:10.0.0.1', '::ffff:7e00:1', '::127.0.0.1', '::2', '[::ffff:127.0.0.1', '::ffff:127.0.0.1]@evil.example', 'fe80::1%lo']) {
      expect(isLoopback(name), name).toBe(false);
    }
    expect(hostnameOf('::ffff:127.0.0.1')).toBe('::ffff:127.0.0.1');
    expect(hostnameOf('[::ffff:127.0.0.1]:9100')).toBe('[::ffff:127.0.0.1]');
    expect(hostnameOf('::1')).toBe('::1');
  });

  test('bound to a mapped loopback address, the Host check applies', () => {
    for (const bound of ['::ffff:127.0.0.1', '[::ffff:127.0.0.1]', '::ffff:127.0.0.2']) {
      expect(refusedHost(bound, 'rebind.example:9100'), bound).toMatch(/Host "rebind.example" is not a loopback name/);
      expect(refusedHost(bound, 'localhost:9100'), bound).toBeUndefined();
    }
  });

  test('a mapped loopback Host passes, however it is written', () => {
    for (const h of ['[::ffff:127.0.0.1]:9100', '[::ffff:127.0.0.1]', '::ffff:127.0.0.1', '[::ffff:7f00:1]:9100', '::1']) {
      expect(refusedHost('127.0.0.1', h), h).toBeUndefined();
    }
    expect(refusedHost('127.0.0.1', '[::ffff:10.0.0.1]:9100')).toBeDefined();
  });

  test('serveMetrics bound to ::ffff:127.0.0.1 refuses a rebound name (421) and answers a loopback one', async () => {
    const s = await serveMetrics({ metrics: new Metrics(), port: 0, host: '::ffff:127.0.0.1' });
    open.push(s);
    const port = new URL(s.url).port;
    const refused = await get(`${s.url}/metrics`, `rebind.example:${port}`);
    expect(refused.status).toBe(421);
    expect(refused.body).toMatch(/bound to ::ffff:127\.0\.0\.1/);
    // The spelling a client sends (the URL standard's); hono's adapter answers 400 to a Host that is not in it, before any check of ours.
    for (const h of [`localhost:${port}`, `[::ffff:7f00:1]:${port}`, `127.0.0.1:${port}`]) {
      expect([h, (await get(`${s.url}/metrics`, h)).status]).toEqual([h, 200]);
    }
  });
});

describe('serveMetrics Host check', () => {
  test('bound to loopback, a non-loopback Host is refused on every path (421); a loopback one is served', async () => {
    const s = await serveMetrics({ metrics: new Metrics(), port: 0, health: () => ({ state: 'running', reason: '' }) });
    open.push(s);
    const port = new URL(s.url).port;
    for (const path of ['/metrics', '/readyz', '/healthz']) {
      const refused = await get(`${s.url}${path}`, `rebind.example:${port}`);
      expect([path, refused.status]).toEqual([path, 421]);
      expect(refused.body).toMatch(/not a loopback name/);
      expect((await get(`${s.url}${path}`, `localhost:${port}`)).status).toBe(200);
    }
    expect((await get(`${s.url}/metrics`)).status).toBe(200);
  });

  test('bound to all interfaces, any Host is served (it is meant to be scraped by name)', async () => {
    const s = await serveMetrics({ metrics: new Metrics(), port: 0, host: '0.0.0.0' });
    open.push(s);
    const port = new URL(s.url).port;
    expect((await get(`http://127.0.0.1:${port}/metrics`, `metrics.internal:${port}`)).status).toBe(200);
  });
});
