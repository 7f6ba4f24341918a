/**
 * A hand-made store history for the auditors' own tests: one `write` per
 * revision (its writes land together), records given as objects. Keys are
 * `<P><kind>.<name>` (`<P>plan` for the plan); `queue`, `folded` and
 * `result` carry no split id.
 */
import type { HistoryEvent } from './history.js';

export const P = 'splitfleet/job/';
export const FP = '0123456789abcdef';

export type HandKind = 'plan' | 'queue' | 'folded' | 'result' | 'assign' | 'spec' | 'split' | 'progress' | 'lease';

export class History {
  readonly events: HistoryEvent[] = [];
  private rev = 0;

  write(...ws: [kind: HandKind, name: string, rec: Record<string, unknown> | 'delete'][]): number {
    const rev = ++this.rev;
    for (const [kind, name, rec] of ws) {
      const key = kind === 'plan' ? `${P}plan` : `${P}${kind}.${name}`;
      const id = kind === 'plan' || kind === 'queue' || kind === 'folded' || kind === 'result' ? undefined : name;
      this.events.push(rec === 'delete'
        ? { rev, type: 'delete', key, kind, id, rec: undefined, lease: undefined, at: rev }
        : { rev, type: 'put', key, kind, id, rec, lease: kind === 'lease' ? 'L' : undefined, at: rev });
    }
    return rev;
  }
}
