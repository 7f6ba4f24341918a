#!/usr/bin/env node
// A standing fleet member: serves every job of its kinds submitted under the root, sharing its
// lanes among them, until stopped (SIGTERM drains every job's lanes). Two kinds:
//   - "wordcount": params { files: [path, …] } counts the words of each file (a split per file);
//   - "checksum":  params { files: [path, …] } sha256 of each file, read as divisible byte ranges
//                  (a large file is divided while lanes would idle: docs/dividing.md).
// Results go to --out as JSON lines ({ job, kind, file, … }); each job's onFinished appends a
// { job, finished: verdict } line once per job, across the whole fleet.
//
//   npm run build
//   node examples/standing-fleet/worker.mjs --etcd http://127.0.0.1:2379 --instance a --out results.jsonl &
//   node examples/standing-fleet/worker.mjs --etcd http://127.0.0.1:2379 --instance b --out results.jsonl &
//   node examples/standing-fleet/submit.mjs --etcd http://127.0.0.1:2379 --job wc-1 --kind wordcount some/*.txt
//
// In your own project, import from 'splitfleet' and 'splitfleet/etcd' instead of the relative paths.
import { createHash } from 'node:crypto';
import { appendFile, open, readFile, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { EtcdStore } from '../../dist/src/etcd.js';
import { divisibleRange, serve } from '../../dist/src/index.js';

const { values: args } = parseArgs({
  options: {
    etcd: { type: 'string', default: 'http://127.0.0.1:2379' },
    instance: { type: 'string' },
    out: { type: 'string' },
    root: { type: 'string', default: 'splitfleet' },
    lanes: { type: 'string', default: '4' },
  },
});
if (!args.instance || !args.out) {
  console.error('usage: worker.mjs --instance ID --out FILE [--etcd URL] [--root PREFIX] [--lanes N]');
  process.exit(2);
}
const store = new EtcdStore({ endpoints: args.etcd });
const emit = (line) => appendFile(args.out, `${JSON.stringify(line)}\n`);
const sizes = async (files) => Promise.all(files.map(async (file) => ({ file, size: (await stat(file)).size })));

const server = await serve({
  store, root: args.root, instance: args.instance, maxInFlight: Number(args.lanes),
  kinds: {
    wordcount: {
      planner: async ({ files }) => ({ final: true, splits: (await sizes(files)).map(({ file, size }) => ({ id: file, weight: size, descriptor: { file } })) }),
      handler: async (split, job) => {
        const text = await readFile(split.descriptor.file, 'utf8');
        await emit({ job: job.job, kind: job.kind, file: split.descriptor.file, words: text.split(/\s+/).filter(Boolean).length });
        await split.complete(true);
      },
      onFinished: (f) => emit({ job: f.job, finished: f.verdict, key: f.key }),
    },
    checksum: {
      planner: async ({ files }) => ({
        final: true,
        splits: (await sizes(files)).map(({ file, size }) => ({ id: file, weight: Math.max(1, size), descriptor: { file, from: 0, to: size } })),
      }),
      // Each part (the file, or a residual of it) hashes its own byte range: one line per part.
      handler: async (split, job) => {
        const range = divisibleRange(split);
        const fh = await open(split.descriptor.file, 'r');
        const hash = createHash('sha256');
        const from = range.position;
        try {
          for (let r; (r = await range.next(64 * 1024)); ) {
            const buf = Buffer.alloc(r.to - r.from);
            await fh.read(buf, 0, buf.length, r.from);
            hash.update(buf);
            split.advance(range.position, { done: range.done }); // committed on the lane's timer
          }
        } finally {
          await fh.close();
        }
        await emit({ job: job.job, kind: job.kind, file: split.descriptor.file, part: split.id, from, to: range.end, sha256: hash.digest('hex') });
        await range.complete();
      },
      onFinished: (f) => emit({ job: f.job, finished: f.verdict, key: f.key }),
    },
  },
  onError: (e) => console.error(`worker ${args.instance}: ${e.message}`),
});
console.error(`worker ${args.instance}: serving wordcount and checksum under ${args.root}/`);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, async () => {
    await server.close();
    await store.close();
    process.exit(0);
  });
}
