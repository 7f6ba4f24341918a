#!/usr/bin/env node
// Submits a job to a standing fleet (worker.mjs) and waits for its verdict: exit 0 complete, 1 not.
//
//   node examples/standing-fleet/submit.mjs --etcd http://127.0.0.1:2379 --job wc-1 --kind wordcount a.txt b.txt
//
// The same is `splitfleet submit --job wc-1 --kind wordcount --params '{"files":["a.txt"]}'` then
// `splitfleet wait --job wc-1`. Submitting the same job again is harmless; another definition under
// the same name is refused (JOB_CONFLICT).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EtcdStore } from '../../dist/src/etcd.js';
import { submitJob, waitForJob } from '../../dist/src/index.js';

const { values: args, positionals: files } = parseArgs({
  allowPositionals: true,
  options: {
    etcd: { type: 'string', default: 'http://127.0.0.1:2379' },
    job: { type: 'string' },
    kind: { type: 'string' },
    root: { type: 'string', default: 'splitfleet' },
  },
});
if (!args.job || !args.kind || files.length === 0) {
  console.error('usage: submit.mjs --job NAME --kind wordcount|checksum FILE… [--etcd URL] [--root PREFIX]');
  process.exit(2);
}
const store = new EtcdStore({ endpoints: args.etcd });
try {
  const submitted = await submitJob({ store, root: args.root, job: args.job, kind: args.kind, params: { files: files.map((f) => resolve(f)) } });
  console.error(`job ${args.job}: ${submitted.outcome}`);
  const result = await waitForJob({ store, root: args.root, job: args.job, timeoutMs: 5 * 60_000 });
  console.log(JSON.stringify({ job: result.job, verdict: result.verdict, planned: result.planned }));
  process.exitCode = result.verdict === 'complete' ? 0 : 1;
} finally {
  await store.close();
}
