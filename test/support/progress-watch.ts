/**
 * Follows every `progress.{id}` write of a job through the one history
 * recorder and checks, as each lands, the one promise a watcher can:
 * committed progress never goes backwards (invariants.ts's
 * progressNeverRegresses, the rule every suite shares). Framework-free; the
 * test asserts on `regressions`, which fills as writes arrive.
 */
import { decodeRecord } from '../../src/protocol/records.js';
import type { Store } from '../../src/store/store.js';
import { HistoryRecorder, type HistoryEvent } from './history.js';
import { progressNeverRegresses } from './invariants.js';

export interface ProgressWatch {
  /** The last progress seen per split. */
  last: Map<string, number>;
  /** One line per write that took a split's progress (or its epoch) backwards. */
  regressions: string[];
  /** The recorder: `ready` once watching, `close()` at the end. */
  handle: HistoryRecorder;
}

/** `fp`: the job's fingerprint hash; each record is also read with the production codec, strictly. */
export function watchProgress(store: Store, prefix: string, fp: string): ProgressWatch {
  const last = new Map<string, number>();
  const regressions: string[] = [];
  const previous = new Map<string, HistoryEvent>();
  const handle = new HistoryRecorder(store, prefix, prefix);
  handle.follow((e) => {
    if (e.kind !== 'progress' || e.type !== 'put' || e.id === undefined || !e.rec) return;
    const progress = decodeRecord('progress', e.key, e.value!, fp).progress as number;
    const before = previous.get(e.id);
    if (before) for (const p of progressNeverRegresses([before, e])) regressions.push(`${p.split}: ${p.detail}`);
    previous.set(e.id, e);
    last.set(e.id, progress);
  });
  return { last, regressions, handle };
}
