#!/usr/bin/env node
/**
 * Compiles assembly/ (the AssemblyScript engine) to build/engine.wasm with
 * asc: optimized for speed, the stub runtime (the engine allocates nothing
 * at run time), no assertions, no imports. `npm run build:wasm` runs this;
 * the library loads the .wasm from the package and never compiles it.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import asc from 'assemblyscript/asc';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFile = join(root, 'build', 'engine.wasm');
await mkdir(dirname(outFile), { recursive: true });

const args = [
  join(root, 'assembly', 'index.ts'),
  '--outFile', outFile,
  '--optimizeLevel', '3',
  '--shrinkLevel', '0',
  '--converge',
  '--runtime', 'stub',
  '--noAssert',
  '--initialMemory', '1',
  ...(process.argv.includes('--wat') ? ['--textFile', join(root, 'build', 'engine.wat')] : []),
];
const { error, stderr } = await asc.main(args, { stdout: process.stdout, stderr: process.stderr });
if (error) {
  process.stderr.write(String(stderr ?? ''));
  console.error(`build-wasm: ${error.message}`);
  process.exit(1);
}
console.log(`build-wasm: wrote ${outFile}`);
