#!/usr/bin/env node
// Checksums every file under a directory, coordinated across any number of
// processes (on one machine or many sharing the directory) through etcd.
//
//   npm run build
//   node examples/checksum/worker.mjs --etcd http://127.0.0.1:2379 --dir ./data --out sums.jsonl --instance a &
//   node examples/checksum/worker.mjs --etcd http://127.0.0.1:2379 --dir ./data --out sums.jsonl --instance b &
//
// Each file is a split weighted by its size. A file is read in chunks; every
// chunk's sha256 is kept, and the byte offset reached and the chunk digests so
// far are committed as the split's progress (at most once a second, and at
// every drain), so a file moved to another process, or taken over after a
// crash, resumes at the last committed chunk boundary instead of starting
// over. (Node cannot serialise a running hash's state, which is why the
// digest is per chunk rather than one running hash.)
//
// Output: one JSON line per file, appended to --out:
//   {"path","size","chunkBytes","chunkSha256":[...],"treeSha256"}
// where treeSha256 = sha256 of the concatenated binary chunk digests. For a
// file of at most one chunk, chunkSha256[0] is the plain sha256 of the file.
// Delivery is at-least-once: after a crash a file may appear twice, with
// identical lines; dedupe by path.
//
// In your own project, import from 'splitfleet' and 'splitfleet/etcd' instead of the relative paths.
import { createHash } from 'node:crypto';
import { appendFile, open, readdir, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { EtcdStore } from '../../dist/src/etcd.js';
import { startCoordinator } from '../../dist/src/index.js';

const { values: args } = parseArgs({
  options: {
    etcd: { type: 'string' },
    dir: { type: 'string' },
    out: { type: 'string' },
    instance: { type: 'string' },
    job: { type: 'string', default: 'checksum' },
    'chunk-bytes': { type: 'string', default: String(1024 * 1024) },
    lanes: { type: 'string', default: '4' },
  },
});
for (const name of ['etcd', 'dir', 'out', 'instance']) {
  if (args[name] === undefined) {
    console.error(`checksum: --${name} is required\nusage: worker.mjs --etcd URL --dir DIR --out FILE --instance ID [--job NAME] [--chunk-bytes N] [--lanes N]`);
    process.exit(2);
  }
}
const dir = resolve(args.dir);
const out = resolve(args.out);
const chunkBytes = Number(args['chunk-bytes']);
const lanes = Number(args.lanes);
if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) {
  console.error('checksum: --chunk-bytes must be a positive integer');
  process.exit(2);
}

/** Every regular file under `root`, as paths relative to it, sorted. */
async function walk(root) {
  const files = [];
  const visit = async (d) => {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) await visit(full);
      else if (entry.isFile()) files.push(relative(root, full).split(sep).join('/'));
    }
  };
  await visit(root);
  return files.sort();
}

/** A split id for a path: the path itself (an id is any string of up to 1,024 UTF-8 bytes, '/' included). */
function splitId(path) {
  return Buffer.byteLength(path) <= 1024 ? path : `sha-${createHash('sha256').update(path).digest('hex')}`;
}

// The planner runs only on the leader: one split per file, weighted by size.
async function planner() {
  const splits = [];
  for (const path of await walk(dir)) {
    const { size } = await stat(join(dir, path));
    splits.push({ id: splitId(path), weight: size, descriptor: { path, size } });
  }
  return { splits, final: true };
}

function treeSha256(chunks) {
  const h = createHash('sha256');
  for (const c of chunks) h.update(Buffer.from(c, 'hex'));
  return h.digest('hex');
}

async function handler(split) {
  const { path, size } = split.descriptor;
  // Resume from the last commit: the offset reached and the digests of the chunks before it.
  let offset = split.progress?.offset ?? 0;
  const chunks = [...(split.progress?.chunks ?? [])];
  let committedAt = Date.now();
  const file = await open(join(dir, path), 'r');
  try {
    const buffer = Buffer.alloc(Math.min(chunkBytes, Math.max(1, size)));
    while (offset < size) {
      if (split.signal.aborted) return; // lost or forced: write nothing more
      if (split.drainSignal.aborted) {
        // Asked to give the file up: commit exactly where we are, then return (the split is released).
        await split.commit({ offset, chunks });
        return;
      }
      const want = Math.min(chunkBytes, size - offset);
      const { bytesRead } = await file.read(buffer, 0, want, offset);
      if (bytesRead !== want) throw new Error(`${path}: read ${bytesRead} bytes at ${offset}, expected ${want} (did the file change?)`);
      chunks.push(createHash('sha256').update(buffer.subarray(0, bytesRead)).digest('hex'));
      offset += bytesRead;
      if (offset < size && Date.now() - committedAt >= 1000) {
        await split.commit({ offset, chunks });
        committedAt = Date.now();
      }
    }
  } finally {
    await file.close();
  }
  const result = { path, size, chunkBytes, chunkSha256: chunks, treeSha256: treeSha256(chunks) };
  // Written before the terminal commit: a crash between the two replays the file (a duplicate line), never loses it.
  await appendFile(out, `${JSON.stringify(result)}\n`);
  await split.complete({ offset, chunks: chunks.length, treeSha256: result.treeSha256 });
}

const store = new EtcdStore({ endpoints: args.etcd.split(',') });
const coordinator = await startCoordinator({
  store,
  job: args.job,
  instance: args.instance,
  maxInFlight: lanes,
  // The job's identity: a worker started on another directory or chunk size is refused at start-up.
  fingerprint: `checksum-v1:${dir}:${chunkBytes}`,
  planner,
  handler,
});

try {
  // Until the job ends, or SIGTERM/SIGINT: then drain every file (commit and release), resign,
  // revoke the lease; the others carry on. A second signal closes at once.
  const { outcome } = await coordinator.run();
  console.error(`checksum ${args.instance}: job ${args.job} ${outcome}`);
  process.exitCode = outcome === 'stalled' ? 1 : 0;
} catch (e) {
  console.error(`checksum ${args.instance}: ${e.code ?? 'ERROR'}: ${e.message}`);
  process.exitCode = 1;
} finally {
  await store.close();
}
