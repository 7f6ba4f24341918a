/**
 * When the CLI colours (src/cli/color.ts): the flag wins; FORCE_COLOR=0 is
 * off and 1/2/3/empty on even off a terminal; NO_COLOR non-empty is off; else
 * a terminal decides. The old rule read NO_COLOR (any value, empty included)
 * and the terminal only.
 */
import { describe, expect, it } from 'vitest';
import { colorEnabled } from '../../../src/cli/color.js';

describe('colorEnabled', () => {
  it.each([
    // [flag, env, isTTY, expected]
    [undefined, {}, true, true],
    [undefined, {}, false, false],
    [undefined, { NO_COLOR: '1' }, true, false],
    [undefined, { NO_COLOR: '' }, true, true], // empty NO_COLOR is unset (no-color.org)
    [undefined, { FORCE_COLOR: '1' }, false, true],
    [undefined, { FORCE_COLOR: '2' }, false, true],
    [undefined, { FORCE_COLOR: '3' }, false, true],
    [undefined, { FORCE_COLOR: '' }, false, true],
    [undefined, { FORCE_COLOR: 'true' }, false, true],
    [undefined, { FORCE_COLOR: '0' }, true, false],
    [undefined, { FORCE_COLOR: 'false' }, true, false],
    [undefined, { FORCE_COLOR: '1', NO_COLOR: '1' }, false, true], // as Node: FORCE_COLOR beats NO_COLOR
    [undefined, { FORCE_COLOR: 'banana' }, false, false], // unknown value: ignored
    [true, { NO_COLOR: '1' }, false, true], // --color wins
    [false, { FORCE_COLOR: '1' }, true, false], // --no-color wins
  ] as const)('flag %j, env %j, tty %j → %j', (flag, env, tty, expected) => {
    expect(colorEnabled(flag, env, tty)).toBe(expected);
  });
});
