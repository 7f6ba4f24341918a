/** residualPlacement: a new residual is offered first to a member with a lane no split is named for. */
import { describe, expect, it } from 'vitest';
import { residualPlacement } from '../../../src/protocol/residual-placement.js';

describe('residualPlacement', () => {
  it('offers each residual to a member with an idle lane, never to one whose lanes are all named', () => {
    const members = [{ id: 'busy', lanes: 2, named: 3 }, { id: 'idle', lanes: 2, named: 1 }];
    expect(residualPlacement([{ id: 'g÷1', weight: 500 }], members)).toEqual(new Map([['g÷1', 'idle']]));
  });
  it('offers each idle lane one residual, the heaviest first, to the member with the most idle lanes', () => {
    const members = [{ id: 'a', lanes: 2, named: 1 }, { id: 'b', lanes: 4, named: 2 }, { id: 'c', lanes: 1, named: 1 }];
    const out = residualPlacement([{ id: 'r1', weight: 10 }, { id: 'r2', weight: 30 }, { id: 'r3', weight: 20 }, { id: 'r4', weight: 5 }], members);
    // b has 2 idle lanes, a 1: r2 (heaviest) to b, then r3 to a (a and b tie at 1, a first by id), r1 to b; r4 gets none.
    expect(out).toEqual(new Map([['r2', 'b'], ['r3', 'a'], ['r1', 'b']]));
  });
  it('offers nothing when no lane would idle', () => {
    expect(residualPlacement([{ id: 'r', weight: 1 }], [{ id: 'a', lanes: 1, named: 1 }])).toEqual(new Map());
  });
  it('is deterministic whatever the input order', () => {
    const rs = [{ id: 'x', weight: 3 }, { id: 'y', weight: 3 }, { id: 'z', weight: 9 }];
    const ms = [{ id: 'm2', lanes: 3, named: 1 }, { id: 'm1', lanes: 3, named: 1 }];
    expect(residualPlacement([...rs].reverse(), [...ms].reverse())).toEqual(residualPlacement(rs, ms));
  });
});
