/**
 * Deliberately broken coordinators for the simulation (schedule.ts runs one
 * when a run names it): the store facade rewrites every transaction a process
 * sends through one of these, stripping a guard or an op, so regressions.test.ts
 * can show the auditor catches each. Never set in real runs. Pure functions of
 * a transaction.
 */
import type { Txn } from '../../src/store/store.js';

/**
 * Deliberately broken coordinators, to show the auditor has teeth:
 * - 'unfenced-commit': a lane's commit/release/complete drops its guards
 *   (split revision, progress revision, own lease key), so a zombie's write lands;
 * - 'claim-unguarded': a claim drops its guards (record revision, lease key
 *   absent or its own), so two can take one split, or take it from a live owner;
 * - 'leader-unguarded': leader writes drop the leadership guard (and the
 *   publication fence, which orders assignment writes), so a deposed leader's
 *   writes land;
 * - 'campaign-stale-plan': a campaign drops its compare of the plan record
 *   (decision 0084), so a candidate whose view lags leads a generation an
 *   earlier term already led.
 */
export const MUTANTS: Record<string, (txn: Txn) => Txn> = {
  'unfenced-commit': (txn) => {
    const writesSplit = txn.success.some((o) => o.op === 'put' && (o.key.includes('/split.') || o.key.includes('/progress.')));
    const writesLease = txn.success.some((o) => o.op === 'put' && o.key.includes('/lease.'));
    const fence = (key: string) => key.includes('/split.') || key.includes('/progress.') || key.includes('/lease.');
    return writesSplit && !writesLease ? { ...txn, compares: txn.compares.filter((c) => !fence(c.key)) } : txn;
  },
  'claim-unguarded': (txn) => {
    const writesLease = txn.success.some((o) => o.op === 'put' && o.key.includes('/lease.'));
    return writesLease ? { ...txn, compares: [] } : txn;
  },
  'campaign-stale-plan': (txn) => (txn.success.some((o) => o.op === 'put' && o.key.endsWith('/leader'))
    ? { ...txn, compares: txn.compares.filter((c) => !c.key.endsWith('/plan')) }
    : txn),
  'leader-unguarded': (txn) => ({
    ...txn, compares: txn.compares.filter((c) => !((c.key.endsWith('/leader') || c.key.endsWith('/publish')) && c.target === 'modRevision')),
  }),
};

/** A division (decision 0063): the lane's fenced write with a residual's spec created (by a worker, never with a lease key). */
const divides = (txn: Txn) => txn.success.some((o) => o.op === 'put' && o.key.includes('/progress.')) && txn.success.some((o) => o.op === 'put' && o.key.includes('/spec.'));

/**
 * Deliberately broken divisions (decision 0063), run on dividing schedules:
 * - 'division-drops-residual': the division lands without creating its residual, so the
 *   units past the new end belong to nobody;
 * - 'division-unfenced': the division drops the lane's guards, so a stale owner's division lands.
 */
export const DIVIDE_MUTANTS: Record<string, (txn: Txn) => Txn> = {
  'division-drops-residual': (txn) => (divides(txn) ? { ...txn, success: txn.success.filter((o) => !(o.op === 'put' && (o.key.includes('/spec.') || o.key.includes('/split.')))) } : txn),
  'division-unfenced': (txn) => (divides(txn) ? { ...txn, compares: txn.compares.filter((c) => !/\/(split|progress|lease)\./.test(c.key) || c.target === 'absent') } : txn),
};

const promotes = (txn: Txn) => txn.success.some((o) => o.op === 'put' && o.key.includes('/spec.')) && !txn.success.some((o) => o.key.includes('/lease.'));
const folds = (txn: Txn) => txn.success.some((o) => o.op === 'put' && o.key.includes('/folded.'));

/**
 * Deliberately broken leaders of a packed job (decision 0037), run on packed schedules:
 * - 'promote-unguarded': a promotion drops its guards (its page's folded revision, spec and
 *   split absent), so a leader whose view missed a fold-back promotes a folded split again;
 * - 'fold-keeps-spec': a fold-back leaves `spec.{id}` behind (its bit set, its record gone).
 */
export const PACKED_MUTANTS: Record<string, (txn: Txn) => Txn> = {
  'promote-unguarded': (txn) => (promotes(txn) ? { ...txn, compares: txn.compares.filter((c) => !/\/(folded|spec|split)\./.test(c.key)) } : txn),
  'fold-keeps-spec': (txn) => (folds(txn) ? { ...txn, success: txn.success.filter((o) => !(o.op === 'delete' && o.key.includes('/spec.'))) } : txn),
};
