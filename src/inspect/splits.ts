/**
 * The per-split view (`splitfleet inspect --split ID`, `--splits`): each
 * split's owner, epoch, attempts, status, committed progress, lease, spec
 * weight, last failure reason and age, like `kafka-consumer-groups --describe`
 * shows every partition. Built from the records of a few splits (read by
 * split-read.ts, page by page), never from the whole job.
 *
 * Age is in store revisions, not seconds: the records carry no wall clock
 * (only `notBefore`, a failure's backoff), so "how long ago" is "how many
 * writes to the store ago" the split's split, progress or lease record last
 * changed (decision 0035).
 *
 * A packed job's split (decision 0037) without records of its own is shown
 * from its queue page: its weight and descriptor, `queued`, or `completed`
 * when its folded bit is set (folded back: its records are deleted).
 *
 * Pure: key-values in, views and text out. Every string from the store goes
 * through `printable` before it is measured or printed (decision 0030).
 */
import { applyRecord, emptyJobRecords, splitState, type JobRecords, type SplitState } from './report.js';
import { pageName, pagedSplit, usesPages } from './packed-records.js';
import { printable, printableJson } from './printable.js';
import { formatWait, formatWeight } from './render.js';
import { alignColumns, truncateDisplay } from './width.js';
import { parseKey } from '../protocol/keys.js';
import { residualId } from '../protocol/residual-ids.js';
import type { Json } from '../protocol/records.js';
import type { KeyValue } from '../store/store.js';

/** One split as the records say, at one revision. */
export interface SplitView {
  id: string;
  /** As in the job report: queued, running, draining (revocation in flight), completed, quarantined. */
  status: SplitState;
  /** The split record's epoch (tenancies so far); null without a split record. */
  epoch: number | null;
  attempts: number | null;
  /** The split record's owner (the tenancy in progress); null when nobody owns it. */
  owner: string | null;
  /** The live lease key: who holds it now, for which epoch; `current` is false for a lease of an older epoch. */
  lease: { owner: string; epoch: number; current: boolean } | null;
  weight: number | null;
  /** The descriptor: its spec record's, else (a packed job's queued or folded split) its queue page's; null without either. */
  descriptor: Json | null;
  /**
   * A packed job's split: its queue page and slot, and whether its folded bit is set (it was folded
   * back as completed, so it has no records of its own). Null for the `keys` layout.
   */
  page: { bucket: number; page: number; slot: number; folded: boolean } | null;
  /** The committed progress and the epoch whose fenced write put it there; null before the first commit. */
  progress: { value: Json; epoch: number } | null;
  /** The last failure's reason (a quarantine's, or a retry's). */
  reason: string | null;
  /** A residual's parent (its spec's `parent`, decision 0063); null for a planned split. */
  parent: string | null;
  /** A divided split's divisions (its residuals are `{id}÷1` … `{id}÷{divisions}`), its part's end and weight; null while whole. */
  divided: { divisions: number; end: Json | null; weight: number | null } | null;
  /** Epoch ms before which a failed split is not claimed again; null when none is due. */
  notBefore: number | null;
  /** Ms until `notBefore`, from the view's `now`, when that is still ahead. */
  retryInMs: number | null;
  /** Revision of the last write to its split, progress or lease record. */
  changedAt: number;
  /** Store revisions since then: `revision - changedAt`. */
  ageRevisions: number;
}

/** A page of splits in id order. */
export interface SplitPage {
  root: string;
  job: string;
  prefix: string;
  revision: number;
  /** Anything of the job is stored (a plan or a split record). */
  exists: boolean;
  /** The job's layout (decision 0037): a `keys` job's pages are in id order, a packed job's in queue page order. */
  layout: 'keys' | 'packed';
  splits: SplitView[];
  /** Pass as `--after` for the next page; null on the last page. */
  next: string | null;
  /** Records of these splits this build could not read, one line each, naming the key. */
  problems: string[];
}

/**
 * Views of `ids` from the key-values read for them (their split, spec, progress and lease keys, the
 * assignment records of their lease holders, and for a packed job their queue pages and folded
 * records), decoded against `fp`. Ids with no record at all, and in no page, are left out.
 */
export function splitViews(
  prefix: string, fp: string, ids: readonly string[], kvs: readonly KeyValue[], revision: number, now: number,
): { views: SplitView[]; problems: string[] } {
  const records: JobRecords = emptyJobRecords();
  const problems: string[] = [];
  const changedAt = new Map<string, number>();
  /** A page's last change: its folded record's, else its own (written once). */
  const pageChangedAt = new Map<string, number>();
  for (const kv of kvs) {
    const problem = applyRecord(records, prefix, fp, kv.key, kv.value);
    if (problem !== undefined) problems.push(problem);
    const parsed = parseKey(prefix, kv.key);
    if ((parsed.kind === 'split' || parsed.kind === 'progress' || parsed.kind === 'lease') && kv.modRevision > (changedAt.get(parsed.id) ?? 0)) {
      changedAt.set(parsed.id, kv.modRevision);
    }
    if ((parsed.kind === 'queue' || parsed.kind === 'folded') && kv.modRevision > (pageChangedAt.get(pageName(parsed.bucket, parsed.page)) ?? 0)) {
      pageChangedAt.set(pageName(parsed.bucket, parsed.page), kv.modRevision);
    }
  }
  const paged = usesPages(records);
  const views: SplitView[] = [];
  for (const id of ids) {
    const rec = records.splits.get(id);
    const spec = records.specs.get(id);
    const lease = records.leases.get(id);
    const progress = records.progress.get(id);
    const inPage = paged ? pagedSplit(records.queue, id) : undefined;
    if (!rec && !spec && !lease && !progress && !inPage) continue;
    // A split without records of its own last changed with its page (seeded, or its bit set).
    const at = changedAt.get(id) ?? (inPage ? pageChangedAt.get(pageName(inPage.bucket, inPage.page)) : undefined) ?? 0;
    const notBefore = rec?.notBefore ?? null;
    views.push({
      id,
      status: splitState(records, id),
      epoch: rec?.epoch ?? null,
      attempts: rec?.attempts ?? null,
      owner: rec && rec.owner !== '' ? rec.owner : null,
      lease: lease ? { owner: lease.owner, epoch: lease.epoch, current: rec === undefined || lease.epoch === rec.epoch } : null,
      weight: spec?.weight ?? inPage?.weight ?? null,
      descriptor: spec?.descriptor ?? inPage?.descriptor ?? null,
      page: inPage ? { bucket: inPage.bucket, page: inPage.page, slot: inPage.slot, folded: inPage.folded } : null,
      progress: progress ? { value: progress.progress, epoch: progress.epoch } : null,
      reason: rec?.reason ?? null,
      parent: spec?.parent ?? null,
      divided: progress?.divisions === undefined ? null : { divisions: progress.divisions, end: progress.end ?? null, weight: progress.weight ?? null },
      notBefore,
      retryInMs: notBefore !== null && notBefore > now && rec?.status === 'runnable' ? notBefore - now : null,
      changedAt: at,
      ageRevisions: at === 0 ? 0 : Math.max(0, revision - at),
    });
  }
  return { views, problems };
}

const dash = '—';

/** Folded back: completed by its page's bit, with no record of its own left. */
function isFolded(v: SplitView): boolean {
  return v.page?.folded === true && v.epoch === null;
}

function statusText(v: SplitView): string {
  if (isFolded(v)) return `${v.status} (folded)`;
  return v.retryInMs !== null ? `${v.status}, retry in ${formatWait(v.retryInMs)}` : v.status;
}

/** Why a split has no split record: a packed split not promoted (queued in its page) or folded back; else none is stored. */
function noRecord(v: SplitView): string {
  if (v.page === null) return 'no split record';
  return v.page.folded ? 'folded back into its queue page: its records are deleted' : 'queued in its queue page: no record of its own until it is assigned';
}

function descriptorText(v: SplitView, width: number): string {
  return v.descriptor === null ? dash : truncateDisplay(printableJson(v.descriptor), width);
}

function progressText(v: SplitView): string {
  return v.progress === null ? dash : printableJson(v.progress.value);
}

function ownerText(v: SplitView): string {
  if (v.lease !== null) return printable(v.lease.owner);
  return v.owner === null ? dash : `${printable(v.owner)} (no lease)`;
}

/** The table of a page: one row per split, columns aligned by display width. */
export function renderSplitTable(page: SplitPage, options: { progressWidth?: number; reasonWidth?: number; descriptorWidth?: number } = {}): string {
  const rows: string[][] = [['split', 'status', 'owner', 'epoch', 'attempts', 'weight', 'progress', 'age (rev)', 'last reason', 'descriptor']];
  for (const v of page.splits) {
    rows.push([
      printable(v.id), statusText(v), ownerText(v), v.epoch === null ? dash : String(v.epoch), v.attempts === null ? dash : String(v.attempts),
      v.weight === null ? dash : formatWeight(v.weight), truncateDisplay(progressText(v), options.progressWidth ?? 32),
      String(v.ageRevisions), v.reason === null ? dash : truncateDisplay(printable(v.reason), options.reasonWidth ?? 48),
      descriptorText(v, options.descriptorWidth ?? 32),
    ]);
  }
  const order = page.layout === 'packed' ? '; a packed job: in queue page order' : '';
  const out = [`splits of job ${printable(page.job)} under ${printable(page.root)}/ (revision ${page.revision}${order})`, ''];
  if (page.splits.length === 0) out.push('  no splits on this page');
  else out.push(...alignColumns(rows, new Set([3, 4, 5, 7])).map((l) => `  ${l}`));
  if (page.next !== null) out.push('', `more: --after ${printable(page.next)}`);
  if (page.problems.length > 0) out.push('', `problems (${page.problems.length} records this build cannot read)`, ...page.problems.map((p) => `  ${printable(p)}`));
  return `${out.join('\n')}\n`;
}

/** A divided split's line: its residuals, and where its own part now ends. */
function dividedText(id: string, d: NonNullable<SplitView['divided']>): string {
  const residuals = Array.from({ length: Math.min(d.divisions, 3) }, (_, k) => printable(residualId(id, k + 1)));
  const more = d.divisions > 3 ? `, … ${printable(residualId(id, d.divisions))}` : '';
  const part = `its part now ends at ${d.end === null ? dash : printableJson(d.end)}${d.weight === null ? '' : `, weight ${formatWeight(d.weight)}`}`;
  return `${d.divisions} time${d.divisions === 1 ? '' : 's'} (residuals ${residuals.join(', ')}${more}); ${part}`;
}

/** One split, field by field. */
export function renderSplit(page: SplitPage, v: SplitView): string {
  const lease = v.lease === null
    ? 'none (nobody holds it)'
    : `held by ${printable(v.lease.owner)}, epoch ${v.lease.epoch}${v.lease.current ? '' : ' (an older epoch than the split record\'s: a stale lease, expiring)'}`;
  const fields: [string, string][] = [
    ['status', statusText(v)],
    ['owner', v.owner === null ? 'none' : printable(v.owner)],
    ['epoch', v.epoch === null ? `${dash} (${noRecord(v)})` : String(v.epoch)],
    ['attempts', v.attempts === null ? dash : String(v.attempts)],
    ['lease', lease],
    ['weight', v.weight === null ? `${dash} (no spec record)` : formatWeight(v.weight)],
    ['descriptor', descriptorText(v, 200)],
    ...(v.page === null ? [] : [['queue page', `queue.${v.page.bucket}.${v.page.page}, slot ${v.page.slot}${v.page.folded ? ', folded back as completed' : ''}`] as [string, string]]),
    ['progress', v.progress === null ? 'none committed' : `${printableJson(v.progress.value)} (committed by epoch ${v.progress.epoch})`],
    ...(v.parent === null ? [] : [['divided from', printable(v.parent)] as [string, string]]),
    ...(v.divided === null ? [] : [['divided', dividedText(v.id, v.divided)] as [string, string]]),
    ['last reason', v.reason === null ? dash : printable(v.reason)],
    ['age', `${v.ageRevisions} revision${v.ageRevisions === 1 ? '' : 's'} since its last change (revision ${v.changedAt})`],
  ];
  const out = [`split ${printable(v.id)} of job ${printable(page.job)} under ${printable(page.root)}/ (revision ${page.revision})`];
  out.push(...alignColumns(fields).map((l) => `  ${l}`));
  if (page.problems.length > 0) out.push(`  problems: ${page.problems.map(printable).join('; ')}`);
  return `${out.join('\n')}\n`;
}
