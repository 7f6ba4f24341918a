import { defineConfig } from 'vitest/config';

// Tests run on the TypeScript sources; worker threads and child processes load
// the compiled `dist/` (run `npm run build` first; `.ci/run` does).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Fixed fast-check seed under CI (see the file).
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // etcd-backed suites each start their own etcd; keep parallelism modest on 2 cores.
    maxWorkers: 2,
  },
});
