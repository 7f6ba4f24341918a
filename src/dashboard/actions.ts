/**
 * The dashboard's operator actions (pause, resume, retry), offered only when
 * the host enables them (`actions: true`; `inspect --serve --actions`). Each
 * is the library's own action (src/operator/), so the dashboard can do
 * nothing the CLI cannot, and is refused by the same rules.
 *
 * Invariants:
 * - POST only, and only with the header `x-splitfleet-action: 1` and a JSON
 *   body. A page of another origin cannot send that header without a CORS
 *   preflight, which the dashboard never grants, and an HTML form cannot send
 *   it at all: so a request that has it came from the dashboard's own page
 *   (or a script of someone who may call the host anyway). Authentication is
 *   the host's: these checks stop cross-site requests, not callers.
 * - A refusal of the action (INVALID_INPUT: no such split, a finished job)
 *   is 400 with the library's message; a store that is away, 503.
 */
import { isSplitfleetError } from '../errors.js';
import { pauseJob, resumeJob } from '../operator/control.js';
import { retrySplits } from '../operator/retry.js';
import type { Store } from '../store/store.js';

/** The header a request must carry to act (set by the page's fetch). */
export const ACTION_HEADER = 'x-splitfleet-action';

/** The actions, by the last segment of their path (`job/<job>/actions/<name>`). */
export const ACTIONS = ['pause', 'resume', 'retry'] as const;
export type ActionName = (typeof ACTIONS)[number];

/** An action's answer: the HTTP status and a JSON body (`{ ok: true, result }` or `{ ok: false, error }`). */
export interface ActionAnswer {
  status: 200 | 400 | 403 | 415 | 503;
  body: { ok: true; action: ActionName; job: string; result: unknown } | { ok: false; error: string };
}

/** The request as the action sees it. */
export interface ActionRequest {
  name: ActionName;
  job: string;
  header: string | undefined;
  contentType: string | undefined;
  /** The body, parsed; undefined when it is not JSON. */
  body: unknown;
}

/** Checks the request came from the dashboard's page, then runs the action. */
export async function runAction(store: Store, root: string, req: ActionRequest): Promise<ActionAnswer> {
  if (req.header !== '1') {
    return refuse(403, `refused: an action needs the header ${ACTION_HEADER}: 1 (the dashboard's page sends it; a page of another site cannot)`);
  }
  if (!(req.contentType ?? '').toLowerCase().startsWith('application/json')) {
    return refuse(415, `refused: an action's body must be JSON (content-type application/json; got ${JSON.stringify(req.contentType ?? null)})`);
  }
  if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) {
    return refuse(400, 'refused: an action\'s body must be a JSON object ({} for pause and resume; {"split": ID} or {"allQuarantined": true} for retry)');
  }
  const target = { store, root, job: req.job };
  try {
    const result = await act(req.name, target, req.body as Record<string, unknown>);
    return { status: 200, body: { ok: true, action: req.name, job: req.job, result } };
  } catch (e) {
    if (isSplitfleetError(e, 'INVALID_INPUT') || isSplitfleetError(e, 'INVALID_RECORD')) return refuse(400, e.message);
    return refuse(503, `${req.name} failed: ${(e as Error).message}`);
  }
}

async function act(name: ActionName, target: { store: Store; root: string; job: string }, body: Record<string, unknown>): Promise<unknown> {
  switch (name) {
    case 'pause': return pauseJob(target);
    case 'resume': return resumeJob(target);
    case 'retry': return retrySplits({ ...target, ...retryScope(body) });
  }
}

/** `{"split": ID}` or `{"allQuarantined": true}`; retrySplits refuses anything else with its own message. */
function retryScope(body: Record<string, unknown>): { splits?: string[]; allQuarantined?: boolean } {
  const split = body['split'];
  return {
    ...(split !== undefined ? { splits: [typeof split === 'string' ? split : JSON.stringify(split)] } : {}),
    ...(body['allQuarantined'] === true ? { allQuarantined: true } : {}),
  };
}

function refuse(status: ActionAnswer['status'], error: string): ActionAnswer {
  return { status, body: { ok: false, error } };
}
