/**
 * rateLimitWarnings (coordinator/log.ts): at most N warnings per window
 * reach the logger, then one summary naming how many were suppressed; other
 * levels pass; the next window starts afresh.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/clock.js';
import { rateLimitWarnings, type Logger } from '../../../src/coordinator/log.js';

function recorder(): { log: Logger; lines: { level: string; msg?: string; obj: object }[] } {
  const lines: { level: string; msg?: string; obj: object }[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

describe('rateLimitWarnings', () => {
  it('passes N distinct warnings per window, drops the rest, then logs one summary', () => {
    const clock = new VirtualClock();
    const { log, lines } = recorder();
    const limited = rateLimitWarnings(log, clock, 5, 1000);
    for (let i = 0; i < 50; i++) limited.warn({ key: `k${i}` }, `warning ${i}`);
    limited.error({}, 'an error still passes');
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual(['warning 0', 'warning 1', 'warning 2', 'warning 3', 'warning 4']);
    expect(lines.filter((l) => l.level === 'error')).toHaveLength(1);
    clock.advance(1000);
    const summary = lines.filter((l) => l.level === 'warn').at(-1)!;
    expect(summary.msg).toBe('suppressed 45 warnings (more than 5 in 1 s)');
    expect(summary.obj).toMatchObject({ suppressed: 45 });
    // A new window: warnings pass again, and no second summary without suppression.
    limited.warn({}, 'later');
    clock.advance(5000);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg).slice(-2)).toEqual(['suppressed 45 warnings (more than 5 in 1 s)', 'later']);
  });
});
