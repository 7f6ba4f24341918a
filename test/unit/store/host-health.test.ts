/**
 * The host policy's shared standing of the members of one endpoint list
 * (decisions 0034, 0086): a call goes to a host in the best standing there
 * is, a host that refused a connection or let a call run out its deadline is
 * set aside at once (doubling, capped), and a call that never left this
 * client, or timed out, is recognised as such.
 */
import { describe, expect, it } from 'vitest';
import { HOST_COOLDOWN_MAX_MS, HOST_COOLDOWN_MS, HostHealth, hostPolicy, neverSent, timedOut } from '../../../src/store/etcd/etcd-options.js';

describe('HostHealth', () => {
  it('sets a host that refused a connection aside at once, behind every other, for a cooldown that doubles up to the cap', () => {
    let now = 0;
    const h = new HostHealth(() => now);
    for (const host of ['a', 'b', 'c']) h.add(host);
    h.failed('a', 'refused');
    expect(h.skip('a')).toBe(true);
    expect(h.skip('b')).toBe(false);
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(false);
    h.failed('a', 'refused');
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(true); // 2 s the second time
    for (let i = 0; i < 10; i++) h.failed('a', 'refused');
    now += HOST_COOLDOWN_MAX_MS - 1;
    expect(h.skip('a')).toBe(true);
    now += 1;
    expect(h.skip('a')).toBe(false);
    h.failed('a', 'refused');
    h.succeeded('a');
    expect(h.standing('a')).toBe(0);
  });

  it('sets a host whose call timed out aside at once, behind answering hosts and ahead of refusing ones, doubling while it keeps timing out', () => {
    let now = 0;
    const h = new HostHealth(() => now);
    for (const host of ['a', 'b', 'c']) h.add(host);
    h.failed('a', 'timed-out'); // one deadline is enough: a silent member costs a whole one per call
    expect(h.standing('a')).toBe(1);
    expect(h.skip('a')).toBe(true);
    h.failed('b', 'refused');
    h.failed('c', 'refused');
    expect(h.skip('a')).toBe(false); // the best there is
    expect(h.skip('b')).toBe(true);
    now += HOST_COOLDOWN_MAX_MS; // every cooldown over
    h.failed('a', 'timed-out');
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(true); // 2 s the second time in a row
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(false);
    h.succeeded('a'); // one answer restores it, and the next deadline costs 1 s again
    h.failed('a', 'timed-out');
    now += HOST_COOLDOWN_MS;
    expect(h.skip('a')).toBe(false);
  });

  it('does not lift a host out of its refusal cooldown on a later failure of another kind', () => {
    const h = new HostHealth(() => 0);
    for (const host of ['a', 'b']) h.add(host);
    h.failed('a', 'refused');
    h.failed('a', 'timed-out');
    expect(h.standing('a')).toBe(2);
  });

  it('never skips every host: failing calls stand ahead of refused connections, and the same standing is tried', () => {
    const h = new HostHealth(() => 0);
    for (const host of ['a', 'b']) h.add(host);
    h.failed('a', 'refused');
    for (let i = 0; i < 3; i++) h.failed('b', 'failed'); // three failed calls (an election, say)
    expect(h.standing('b')).toBe(1);
    expect(h.skip('b')).toBe(false);
    expect(h.skip('a')).toBe(true);
    h.failed('b', 'refused');
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
    health.failed('a', 'refused');
    expect(health.standing('a')).toBe(2);
    // A host in cooldown is passed by; once the other is as bad, a stream opens on it without restoring it.
    health.failed('b', 'refused');
    await expect(a.execute(() => stream)).resolves.toBe(stream);
    expect(health.standing('a')).toBe(2);
    await expect(a.execute(() => { throw unavailable('No connection established'); })).rejects.toThrow();
    expect(health.standing('a')).toBe(2);
  });

  it('sets a host aside after one call that ran out its deadline, and passes it by while another member answers', async () => {
    const health = new HostHealth(() => 0);
    const make = hostPolicy(2, isRecoverable, health);
    const [a, b] = [make('a'), make('b')];
    const deadline = Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded after 0.500s'), { recoverable: true });
    await expect(a.execute(() => Promise.reject(deadline))).rejects.toThrow(/DEADLINE/);
    expect(health.standing('a')).toBe(1);
    let called = false;
    const skipped = await a.execute(() => { called = true; return Promise.resolve(1); }).catch((e: Error) => e);
    expect(called).toBe(false);
    expect(neverSent(skipped as Error)).toBe(true);
    await expect(b.execute(() => Promise.resolve(2))).resolves.toBe(2);
    // Another failure (an election's "leader changed") takes three in a row, as before.
    await expect(b.execute(() => Promise.reject(unavailable('etcdserver: leader changed')))).rejects.toThrow();
    expect(health.standing('b')).toBe(0);
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

describe('timedOut', () => {
  it('is true of a passed deadline (a call\'s or a stream\'s) and of a member that gave up waiting for its cluster', () => {
    expect(timedOut(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded after 0.501s,LB pick: 0.001s'))).toBe(true);
    expect(timedOut(Object.assign(new Error('stream ended'), { code: 4 }))).toBe(true);
    expect(timedOut(new Error('14 UNAVAILABLE: etcdserver: request timed out'))).toBe(true);
    expect(timedOut(new Error('14 UNAVAILABLE: etcdserver: leader changed'))).toBe(false);
    expect(timedOut(new Error('14 UNAVAILABLE: No connection established'))).toBe(false);
  });
});
