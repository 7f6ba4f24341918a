/**
 * The host policy's shared standing of the members of one endpoint list
 * (decision 0034): a call goes to a host in the best standing there is, a
 * host that refused a connection is set aside at once (doubling, capped), and
 * a call that never left this client is recognised as such.
 */
import { describe, expect, it } from 'vitest';
import { HOST_COOLDOWN_MAX_MS, HOST_COOLDOWN_MS, HostHealth, hostPolicy, neverSent } from '../../../src/store/etcd/etcd-options.js';

describe('HostHealth', () => {
  it('sets a host that refused a connection aside at once, behind every other, for a cooldown that doubles up to the cap', () => {
    let now = 0;
    const h = new HostHealth(() => now);
    for (const host of ['a', 'b', 'c']) h.add(host);
    h.failed('a', true);
    expect(h.skip('a')).toBe(true);
    expect(h.skip('b')).toBe(false);
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(false);
    h.failed('a', true);
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(true); // 2 s the second time
    for (let i = 0; i < 10; i++) h.failed('a', true);
    now += HOST_COOLDOWN_MAX_MS - 1;
    expect(h.skip('a')).toBe(true);
    now += 1;
    expect(h.skip('a')).toBe(false);
    h.failed('a', true);
    h.succeeded('a');
    expect(h.standing('a')).toBe(0);
  });

  it('never skips every host: failing calls stand ahead of refused connections, and the same standing is tried', () => {
    const h = new HostHealth(() => 0);
    for (const host of ['a', 'b']) h.add(host);
    h.failed('a', true);
    for (let i = 0; i < 3; i++) h.failed('b', false); // three failed calls (an election, say)
    expect(h.standing('b')).toBe(1);
    expect(h.skip('b')).toBe(false);
    expect(h.skip('a')).toBe(true);
    h.failed('b', true);
    expect(h.skip('a')).toBe(false);
    expect(h.skip('b')).toBe(false);
  });
});

describe('hostPolicy', () => {
  const unavailable = (m: string) => Object.assign(new Error(`14 UNAVAILABLE: ${m}`), { recoverable: true });
  const isRecoverable = (e: Error) => 'recoverable' in e;

  it('passes a host that refused a connection by without calling it while another member answers', async () => {
    const health = new HostHealth(() => 0);
    const make = hostPolicy(3, isRecoverable, health);
    const [a, b] = [make('a'), make('b')];
    make('c');
    await expect(a.execute(() => Promise.reject(unavailable('No connection established. Last error: connect ECONNREFUSED')))).rejects.toThrow(/No connection/);
    let called = false;
    const skipped = await a.execute(() => { called = true; return Promise.resolve(1); }).catch((e: Error) => e);
    expect(called).toBe(false);
    expect(neverSent(skipped as Error)).toBe(true);
    await expect(b.execute(() => Promise.resolve(2))).resolves.toBe(2);
  });

  it('does not count a stream\'s opening as an answer, and counts its later failure (etcd3\'s markFailed)', async () => {
    const health = new HostHealth(() => 0);
    const make = hostPolicy(2, isRecoverable, health);
    const a = make('a');
    make('b');
    const stream = { on: () => undefined, write: () => undefined };
    health.failed('a', true);
    expect(health.standing('a')).toBe(2);
    // A host in cooldown is passed by; once the other is as bad, a stream opens on it without restoring it.
    health.failed('b', true);
    await expect(a.execute(() => stream)).resolves.toBe(stream);
    expect(health.standing('a')).toBe(2);
    await expect(a.execute(() => { throw unavailable('No connection established'); })).rejects.toThrow();
    expect(health.standing('a')).toBe(2);
  });

  it('with one endpoint runs every call, whatever failed before', async () => {
    const p = hostPolicy(1, isRecoverable)('a');
    await expect(p.execute(() => Promise.reject(unavailable('No connection established')))).rejects.toThrow();
    await expect(p.execute(() => Promise.resolve(3))).resolves.toBe(3);
  });
});

describe('neverSent', () => {
  it('is true only when no connection carried the request', () => {
    expect(neverSent(new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1'))).toBe(true);
    expect(neverSent(new Error('14 UNAVAILABLE: Connection dropped'))).toBe(false);
    expect(neverSent(new Error('14 UNAVAILABLE: etcdserver: leader changed'))).toBe(false);
    expect(neverSent(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'))).toBe(false);
  });
});
