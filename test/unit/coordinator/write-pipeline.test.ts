/** WritePipeline (seeding's writes in flight): no failure is dropped, whenever it settles. */
import { describe, expect, it } from 'vitest';
import { WritePipeline } from '../../../src/coordinator/leader/write-pipeline.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WritePipeline', () => {
  it('a write that fails between two adds is thrown by the next add (a raced set dropped it)', async () => {
    const pipeline = new WritePipeline(8);
    await pipeline.add(Promise.reject(new Error('page 1.1 lost')));
    await turn(); // settled and out of the set before anything waits on it
    await expect(pipeline.add(Promise.resolve())).rejects.toThrow('page 1.1 lost');
  });

  it('a write that fails after the last add is thrown by drain', async () => {
    const pipeline = new WritePipeline(8);
    let fail!: (e: Error) => void;
    await pipeline.add(new Promise<void>((_, reject) => { fail = reject; }));
    await pipeline.add(Promise.resolve());
    await turn();
    fail(new Error('late'));
    await turn();
    await expect(pipeline.drain()).rejects.toThrow('late');
  });

  it('keeps at most `limit` writes in flight, and the first failure of several', async () => {
    const pipeline = new WritePipeline(2);
    let open = 0;
    let most = 0;
    const write = () => {
      most = Math.max(most, ++open);
      return turn().then(() => { open--; });
    };
    for (let i = 0; i < 5; i++) await pipeline.add(write());
    await pipeline.drain();
    expect(open).toBe(0);
    expect(most).toBeLessThanOrEqual(2);
    const failing = new WritePipeline(4);
    await failing.add(Promise.reject(new Error('first')));
    await failing.add(Promise.reject(new Error('second'))).catch(() => undefined);
    await expect(failing.drain()).rejects.toThrow('first');
  });
});
