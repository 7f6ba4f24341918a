/** The dashboard's event log (inspect/event-log.ts, decision 0070): seeded from the leader's history, continued live, each event once, in revision order, bounded. */
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../../src/inspect/event-log.js';
import { historyEntry } from '../../../src/protocol/job-history.js';

const join = (rev: number, instance = 'w-1') => historyEntry({ kind: 'join', instance, lanes: 2 }, rev, 100 + rev);

describe('EventLog', () => {
  it('opens on the history, then goes on live without telling an event twice', () => {
    const log = new EventLog(10);
    log.addHistory([join(3), historyEntry({ kind: 'leader', instance: 'w-1', generation: 1, previous: null }, 4, 104)]);
    // The watch tells the join of revision 3 too (a dashboard that started before the summary was written).
    log.addLive({ kind: 'join', instance: 'w-1', lanes: 2 }, 3, 999);
    log.addLive({ kind: 'join', instance: 'w-2', lanes: 2 }, 6, 1000);
    // A later summary repeats the old entries and brings a new one.
    log.addHistory([join(3), join(6, 'w-2'), historyEntry({ kind: 'paused' }, 7, 107)]);
    const lines = log.events();
    expect(lines.map((e) => [e.rev, e.kind, e.told])).toEqual([
      [3, 'join', 'history'], [4, 'leader', 'history'], [6, 'join', 'watch'], [7, 'paused', 'history'],
    ]);
    // The first telling stays (its time, its text).
    expect(lines[0]).toMatchObject({ at: 103, text: 'w-1 joined (2 lanes)' });
    expect(new Set(lines.map((e) => e.seq)).size).toBe(lines.length);
  });

  it('puts a history entry that comes after later live lines in its place', () => {
    const log = new EventLog(10);
    log.addLive({ kind: 'move', split: 's-1', from: 'w-1', to: 'w-2', fromLive: true }, 10, 1);
    log.addHistory([historyEntry({ kind: 'failed', split: 's-9', attempts: 1, reason: null }, 8, 0)]);
    expect(log.events().map((e) => e.rev)).toEqual([8, 10]);
  });

  it('keeps the newest lines, and does not put back one it let go', () => {
    const log = new EventLog(3);
    log.addHistory([join(1, 'a'), join(2, 'b'), join(3, 'c'), join(4, 'd')]);
    expect(log.events().map((e) => e.rev)).toEqual([2, 3, 4]);
    log.addHistory([join(1, 'a')]);
    expect(log.events().map((e) => e.rev)).toEqual([2, 3, 4]);
    // Live kinds the history never tells are never deduplicated: two moves of one revision are two lines.
    log.addLive({ kind: 'move', split: 's-1', from: 'a', to: 'b', fromLive: true }, 5, 0);
    log.addLive({ kind: 'move', split: 's-2', from: 'a', to: 'b', fromLive: true }, 5, 0);
    expect(log.events().map((e) => e.rev)).toEqual([4, 5, 5]);
  });
});
