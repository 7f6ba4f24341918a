/**
 * The chaos suite: multi-process fleets on real etcd under seeded fault
 * schedules (worker SIGKILL, SIGSTOP past the lease, leader SIGKILL, etcd
 * SIGKILL and restart on its data dir, connections cut / delayed /
 * partitioned through a loopback proxy, slow / wedged / declining drains, a
 * 3-member cluster losing a member). Each run is audited from the store's
 * full history and the members' ledgers (see checks.ts), and every store call
 * the members and the operator made is held to that history
 * (test/support/history-check.ts); the job must complete with no violation.
 * The faults against etcd itself and the clocks (etcd-scenarios.ts) run in
 * `npm run chaos:etcd` (etcd-chaos.slow.ts), not here.
 *
 * Needs the compiled fleet member: `npx tsc -p tsconfig.json` first (or set
 * CHAOS_FLEET_SCRIPT to another build of it). Bounded for CI (one run per
 * scenario); CHAOS_SOAK=1 runs three seeds per scenario with longer
 * schedules; CHAOS_SEED=<n> replays one seed; figures are printed and written
 * to bench-results/chaos.json.
 */
import { chaosSuite } from './suite.js';
import { SCENARIOS } from './scenarios.js';

chaosSuite({
  title: 'chaos', scenarios: SCENARIOS, baseSeed: 20261130, resultsFile: 'chaos.json', timeoutMs: 180_000,
  replay: (seed, name) => `CHAOS_SEED=${seed} npx vitest run test/chaos -t ${name}`,
});
