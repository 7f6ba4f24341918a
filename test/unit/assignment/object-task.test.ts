/**
 * object-task.ts `inSlices`: how the pool's caller-side steps share the
 * event loop. Every row is stepped once, in order; a new turn starts when
 * the turn is due or has run `chunk` rows, never inside a step; a failing
 * step stops the run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inSlices, type LoopSlices } from '../../../src/assignment/object/object-task.js';

/** LoopSlices whose `due()` answers from a script (cycled), recording what happened. */
function scripted(dueAnswers: readonly boolean[], log: string[]): LoopSlices {
  let k = 0;
  return {
    due: () => dueAnswers.length > 0 && dueAnswers[k++ % dueAnswers.length]!,
    next: async () => void log.push('turn'),
  };
}

describe('inSlices', () => {
  it('steps every row once, in order, and starts a turn only between steps, when due or after chunk rows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 20_000 }), fc.integer({ min: 1, max: 5000 }), fc.array(fc.boolean(), { maxLength: 8 }), async (n, chunk, dues) => {
        const log: string[] = [];
        const steps: [number, number][] = [];
        let sinceTurn = 0;
        const ok = await inSlices(n, chunk, scripted(dues, log), (from, to) => {
          if (log.at(-1) === 'turn') sinceTurn = 0;
          steps.push([from, to]);
          log.push('step');
          sinceTurn += to - from;
          // No turn runs more than chunk rows.
          expect(sinceTurn).toBeLessThanOrEqual(chunk);
          return true;
        });
        expect(ok).toBe(true);
        let at = 0;
        for (const [from, to] of steps) {
          expect(from).toBe(at);
          expect(to).toBeGreaterThan(from);
          at = to;
        }
        expect(at).toBe(n);
        // Never a turn before the first step, and with due() always false only the chunk limit yields.
        expect(log[0] ?? 'step').toBe('step');
        if (dues.every((d) => !d)) expect(log.filter((e) => e === 'turn').length).toBe(n === 0 ? 0 : Math.ceil(n / chunk) - 1);
      }),
      { numRuns: 150 },
    );
  });

  it('stops at the first failing step', async () => {
    const seen: number[] = [];
    const ok = await inSlices(10_000, 3000, scripted([true], []), (from) => {
      seen.push(from);
      return from < 2048;
    });
    expect(ok).toBe(false);
    expect(seen).toEqual([0, 1024, 2048]);
  });
});
