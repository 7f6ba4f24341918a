/** The cursor of readFinalProgress (decision 0069): what it encodes comes back; anything else is refused naming the field. */
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, type FinalProgressCursor } from '../../../src/operator/final-progress-cursor.js';

describe('the final progress cursor', () => {
  it('round-trips every kind of position', () => {
    const cursors: FinalProgressCursor[] = [
      { pass: 'split', after: 'split.a%2Fb' },
      { pass: 'result' },
      { pass: 'result', at: { generation: 3, seq: 17, skip: 5 } },
    ];
    for (const c of cursors) {
      const text = encodeCursor(c);
      expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(text)).toEqual(c);
    }
  });

  it('refuses what it did not write, naming the field', () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    expect(() => decodeCursor('')).toThrow(/^after: must be a non-empty cursor string/);
    expect(() => decodeCursor(42)).toThrow(/after: must be a non-empty cursor string/);
    expect(() => decodeCursor('a b')).toThrow(/after: must be a non-empty cursor string/);
    expect(() => decodeCursor(Buffer.from('{').toString('base64url'))).toThrow(/after: is not a cursor this reader wrote/);
    for (const bad of [['s', 'spec.a'], ['s', 1], ['r', -1, 0, 0], ['r', 1, 2], ['r', 1.5, 0, 0], ['x']]) {
      expect(() => decodeCursor(b64(bad), 'next')).toThrow(/^next: is not a cursor this reader wrote/);
    }
  });
});
