/**
 * Follows every `progress.{id}` write of a job through a store's watch and
 * checks the one promise a watcher can: committed progress (a number here)
 * never goes backwards. Framework-free; the test asserts on `regressions`.
 */
import { parseKey } from '../../src/protocol/keys.js';
import { decodeRecord } from '../../src/protocol/records.js';
import type { Store, WatchHandle } from '../../src/store/store.js';

export interface ProgressWatch {
  /** The last progress seen per split. */
  last: Map<string, number>;
  /** One line per write that took a split's progress backwards. */
  regressions: string[];
  handle: WatchHandle;
}

export function watchProgress(store: Store, prefix: string, fp: string): ProgressWatch {
  const last = new Map<string, number>();
  const regressions: string[] = [];
  const handle = store.watch(prefix, {
    onEvent: (e) => {
      const parsed = parseKey(prefix, e.key);
      if (parsed.kind !== 'progress' || e.type !== 'put') return;
      const p = decodeRecord('progress', e.key, e.value!, fp).progress as number;
      if (p < (last.get(parsed.id) ?? 0)) regressions.push(`${parsed.id}: ${last.get(parsed.id)} → ${p}`);
      last.set(parsed.id, p);
    },
  });
  return { last, regressions, handle };
}
