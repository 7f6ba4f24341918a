// `npm run chaos:etcd` (etcd-chaos.slow.ts): the main config with only the etcd chaos file
// included (spread, not mergeConfig, which would add to the main include instead of replacing it).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';

export default defineConfig({
  ...base,
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: { ...base.test, include: ['test/chaos/etcd-chaos.slow.ts'], maxWorkers: 1 },
});
