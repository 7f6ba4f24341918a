/**
 * Whether the CLI colours its output (decision 0035), in this order:
 * 1. the flag: `--color` on, `--no-color` off;
 * 2. FORCE_COLOR: '0' or 'false' off; '1', '2', '3', 'true' or empty on, even
 *    when stdout is not a terminal (Node's own rule: it beats NO_COLOR);
 * 3. NO_COLOR set and non-empty: off (no-color.org);
 * 4. otherwise on only when stdout is a terminal.
 * Pure: the environment and the terminal are arguments.
 */
export function colorEnabled(flag: boolean | undefined, env: NodeJS.ProcessEnv, isTTY: boolean): boolean {
  if (flag !== undefined) return flag;
  const force = env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force.toLowerCase() === 'false') return false;
    if (['', '1', '2', '3', 'true'].includes(force.toLowerCase())) return true;
    // Another value: not a setting this knows; fall through to the rest.
  }
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return isTTY;
}
