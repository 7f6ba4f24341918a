/**
 * Fleet members as OS processes, for tests and benches that kill, pause and
 * restart workers: the one spawner (src/testing/fleet-member.ts, which the demo
 * uses too) pointed at the compiled member, `dist/src/testing/fleet-process.js`
 * (run `npx tsc -p tsconfig.json` first), since vitest runs the sources.
 *
 * Invariants: a missing `dist/` is a loud error naming the command to run,
 * never a skipped test; every member spawned here is SIGKILLed at the latest
 * when this process exits. Framework-free (no vitest import), so benches can
 * use it too.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FleetMember, type SpawnOptions } from '../../src/testing/fleet-member.js';
import type { FleetProcessConfig } from '../../src/testing/fleet-config.js';

export { FleetMember, killAllFleetMembers, type FleetExit, type SpawnOptions } from '../../src/testing/fleet-member.js';
export type { FleetEvent, FleetProcessConfig } from '../../src/testing/fleet-config.js';

/** The repository root: the nearest ancestor holding splitfleet's package.json (works from test/ and dist/). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'splitfleet') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the splitfleet repository root above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

/** Path of the compiled fleet member; throws with the build command when it is missing. */
export function fleetProcessScript(): string {
  const script = resolve(repoRoot(), 'dist/src/testing/fleet-process.js');
  if (!existsSync(script)) {
    throw new Error(
      `fleet process tests run the compiled fleet member, and ${script} does not exist: ` +
        `run 'npx tsc -p tsconfig.json' (or 'npm run build') in ${repoRoot()} first`,
    );
  }
  return script;
}

/** Spawns one fleet member from the compiled script (or `options.script`). */
export function spawnFleetMember(config: FleetProcessConfig, options: SpawnOptions = {}): FleetMember {
  return new FleetMember(config, { ...options, script: options.script ?? fleetProcessScript() });
}

/** Spawns one member per instance id, sharing `base`. */
export function spawnFleet(base: Omit<FleetProcessConfig, 'instance'>, instances: string[], options: SpawnOptions = {}): FleetMember[] {
  return instances.map((instance) => spawnFleetMember({ ...base, instance }, options));
}
