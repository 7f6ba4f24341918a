/**
 * listDefinitions: the job definitions under a root (`<root>/~jobs/`,
 * decision 0064), read page by page, for the tools that show a job's kind
 * next to its state (the dashboard's job list). A definition that cannot be
 * read is listed with its problem, not dropped: the job still exists.
 *
 * Read-only. Never reads a job's own keys: a definition's range holds only
 * definitions (`~` is in no job or root name).
 */
import { decodeDefinition, definitionsPrefix, jobOfDefinitionKey } from '../protocol/definitions.js';
import type { Json } from '../protocol/record-types.js';
import type { Store } from '../store/store.js';
import { checkJobNames } from './job.js';

/** Definitions per page of the listing (each at most a few KiB beyond its parameters). */
const PAGE = 200;

/** One job's definition as listed: its kind and parameters, or why it cannot be read. */
export type ListedDefinition =
  | { job: string; kind: string; params: Json; submittedAt: number; problem: null }
  | { job: string; kind: null; params: null; submittedAt: null; problem: string };

/** Every definition under `root` (default `splitfleet`), in job-name order. */
export async function listDefinitions(options: { store: Store; root?: string }): Promise<ListedDefinition[]> {
  const root = options.root ?? 'splitfleet';
  checkJobNames('x', root);
  const prefix = definitionsPrefix(root);
  const out: ListedDefinition[] = [];
  let startAfter: string | undefined;
  for (;;) {
    const page = await options.store.list(prefix, { limit: PAGE, ...(startAfter !== undefined ? { startAfter } : {}) });
    for (const kv of page.kvs) {
      const job = jobOfDefinitionKey(root, kv.key);
      if (job === undefined) continue; // a key below the range's own (`~jobs/a/b`): no definition
      try {
        const d = decodeDefinition(kv.key, kv.value);
        out.push({ job, kind: d.kind, params: d.params, submittedAt: d.submittedAt, problem: null });
      } catch (e) {
        out.push({ job, kind: null, params: null, submittedAt: null, problem: (e as Error).message });
      }
    }
    if (!page.more || page.kvs.length === 0) return out;
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}
