/**
 * Checkers over a recorded job history, one per invariant, pure (history in,
 * problems out; empty when the invariant holds). The tests assert that the
 * list is empty, so a failure names the split and revision at fault.
 *
 * No I/O, no clock.
 */
import type { HistoryEvent } from './history.js';

/**
 * The fence, checked over one split's whole history: the owner changes only
 * through an epoch bump (a claim), the epoch never goes back, no write at an
 * older epoch lands after a newer claim, every write of an epoch is by that
 * epoch's claimant (or its release), and a lease key is only ever created
 * where none existed. Returns the problems found (empty when sound).
 */
export function fenceProblems(history: HistoryEvent[], id: string): string[] {
  const problems: string[] = [];
  let prev: Record<string, any> | undefined;
  const claimant = new Map<number, string>();
  for (const e of history) {
    if (e.kind !== 'split' || e.id !== id || e.type !== 'put' || !e.rec) continue;
    const r = e.rec;
    if (prev) {
      if (r.epoch < prev.epoch) problems.push(`${id}@${e.rev}: epoch went back ${prev.epoch} → ${r.epoch}`);
      if (r.owner !== '' && r.owner !== prev.owner && r.epoch !== prev.epoch + 1) {
        problems.push(`${id}@${e.rev}: owner ${JSON.stringify(prev.owner)} → ${JSON.stringify(r.owner)} without one epoch bump (${prev.epoch} → ${r.epoch})`);
      }
      if (r.epoch === prev.epoch + 1 && r.owner === '') problems.push(`${id}@${e.rev}: epoch bumped without an owner`);
    }
    if (r.epoch > (prev?.epoch ?? 0)) claimant.set(r.epoch, r.owner);
    else if (r.owner !== '' && claimant.has(r.epoch) && claimant.get(r.epoch) !== r.owner) {
      problems.push(`${id}@${e.rev}: ${r.owner} wrote at epoch ${r.epoch}, claimed by ${claimant.get(r.epoch)}`);
    }
    prev = r;
  }
  // A live lease key is overwritten only by a reclaim: the same instance (a restarted run)
  // taking its own key over, at a new epoch. Another owner over a live key is a double owner.
  let live: Record<string, any> | undefined;
  for (const e of history) {
    if (e.kind !== 'lease' || e.id !== id) continue;
    if (e.type === 'delete') live = undefined;
    else {
      if (live && (e.rec?.owner !== live.owner || !(e.rec?.epoch > live.epoch))) {
        problems.push(`${id}@${e.rev}: lease key of ${live.owner} (epoch ${live.epoch}) overwritten while live by ${e.rec?.owner} (epoch ${e.rec?.epoch})`);
      }
      live = e.rec;
    }
  }
  return problems;
}
