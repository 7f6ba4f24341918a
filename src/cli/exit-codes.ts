/**
 * The CLI's exit codes, one table for every command (decision 0035; the same
 * table is in docs/operations.md and docs/cli.md):
 *   0  the command did what it says;
 *   1  a failure: etcd unreachable or timing out, a write lost to a race,
 *      anything unexpected (and, for `demo`, a lost unit or a stalled job);
 *   2  refused: bad options or input, a rule the action would break (delete a
 *      running job without --force), or nothing to act on: no such job, no
 *      such split. Nothing was written.
 * A refusal or failure is one line on stderr, `splitfleet <command>: …`.
 */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_REFUSED = 2;

/**
 * The help text's exit-code line: `ok` says what 0 means for this command, `refused` what 2 covers
 * beyond bad options, `failure` what 1 does.
 */
export function exitCodesHelp(
  ok: string, refused = 'no such job', failure = 'any other failure (etcd unreachable, a timeout)',
): string {
  return `Exit codes: 0 ${ok}; 2 refused (bad options${refused === '' ? '' : `, ${refused}`}; nothing written); 1 ${failure}.`;
}
