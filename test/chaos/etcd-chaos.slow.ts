/**
 * `npm run chaos:etcd`: the chaos scenarios against etcd itself and the
 * members' clocks (etcd-scenarios.ts: a cluster member cut off from its
 * peers with clients pinned to it, fsync stalls longer than the lease, wall
 * clock steps on workers), each audited like the default chaos suite
 * (chaos.test.ts) and held to the history check. Not in `npm test`: about a
 * minute per scenario on two cores (the CI budget); the file name is outside
 * the default include, and vitest.etcd.config.ts includes it.
 *
 * Needs root (a network namespace, ptrace), iproute2, strace and gcc, and the
 * compiled fleet member (`npm run build:ts`); a missing one fails loudly.
 * CHAOS_SEED=<n> replays one seed; CHAOS_SOAK=1 runs three seeds with longer
 * schedules; figures go to bench-results/chaos-etcd.json.
 */
import { ETCD_SCENARIOS } from './etcd-scenarios.js';
import { requireTool } from './faults.js';
import { chaosSuite } from './suite.js';

chaosSuite({
  title: 'chaos against etcd and clocks', scenarios: ETCD_SCENARIOS, baseSeed: 20261207, resultsFile: 'chaos-etcd.json', timeoutMs: 240_000,
  replay: (seed, name) => `CHAOS_SEED=${seed} npm run chaos:etcd -- -t ${name}`,
  before: () => { for (const tool of ['ip', 'strace', 'gcc'] as const) requireTool(tool); },
});
