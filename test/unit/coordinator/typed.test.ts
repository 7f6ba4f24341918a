/**
 * Typed jobs: `startCoordinator<Descriptor, Progress>` types the handle a
 * handler gets, so descriptors and progress need no casts and a commit of the
 * wrong shape does not compile; the defaults (`Json`) keep untyped callers as
 * they were.
 *
 * The type-level cases (`expectTypeOf`, `@ts-expect-error`) mean something
 * only when compiled, and vitest runs tests without type-checking them: so one
 * test compiles this file and examples/minimal.mjs (its JSDoc types) with the
 * project's compiler options and demands no diagnostics. An unused
 * `@ts-expect-error` is a diagnostic, so each expected error must still occur.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, expectTypeOf, test } from 'vitest';
import {
  MemoryStore,
  silentLogger,
  startCoordinator,
  type Coordinator,
  type CoordinatorOptions,
  type Json,
  type PlannedSplit,
  type Planner,
  type PlanResult,
  type SplitHandle,
  type SplitHandler,
} from '../../../src/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

type FileSplit = { path: string; size: number };
type Offset = { offset: number; digests?: string[] };
interface NotJson { path: string }

const files: Planner<FileSplit> = () => ({
  splits: [{ id: 'a', weight: 3, descriptor: { path: 'a', size: 3 } }, { id: 'b', weight: 5, descriptor: { path: 'b', size: 5 } }],
  final: true,
});

// Compile-time only: never called, so no coordinator starts.
export function typedCases(store: MemoryStore): void {
  const base = { store, job: 'j', instance: 'a' };

  void startCoordinator<FileSplit, Offset>({
    ...base,
    planner: files,
    async handler(split) {
      expectTypeOf(split).toEqualTypeOf<SplitHandle<FileSplit, Offset>>();
      expectTypeOf(split.descriptor).toEqualTypeOf<FileSplit>();
      expectTypeOf(split.progress).toEqualTypeOf<Offset | null>();
      const offset = split.progress?.offset ?? 0; // no cast, no narrowing of a Json
      await split.commit({ offset: offset + split.descriptor.size });
      // @ts-expect-error a progress of the wrong type does not compile
      await split.commit({ offset: 'far' });
      // @ts-expect-error nor does one missing a field
      await split.complete({ digests: [] });
      await split.release();
    },
  });

  // The planner is checked against the handler's descriptor type.
  void startCoordinator<FileSplit, Offset>({
    ...base,
    // @ts-expect-error a descriptor missing a field
    planner: () => ({ splits: [{ id: 'a', weight: 1, descriptor: { path: 'a' } }], final: true }),
    handler: async () => undefined,
  });
  void startCoordinator<FileSplit, Offset>({
    ...base,
    // @ts-expect-error a typed descriptor cannot be left out (it would reach the handler as null)
    planner: () => ({ splits: [{ id: 'a', weight: 1 }], final: true }),
    handler: async () => undefined,
  });

  // Without type arguments, an annotated handler decides both types.
  const handler: SplitHandler<FileSplit, Offset> = async (split) => {
    await split.commit({ offset: split.descriptor.size });
  };
  const started = startCoordinator({ ...base, planner: files, handler });
  expectTypeOf(started).toEqualTypeOf<Promise<Coordinator>>();
  const options: CoordinatorOptions<FileSplit, Offset> = { ...base, planner: files, handler };
  void startCoordinator(options);

  // The defaults are the untyped API: Json in, Json out, descriptor optional.
  void startCoordinator({
    ...base,
    planner: () => ({ splits: [{ id: 'a', weight: 1 }], final: true }),
    async handler(split) {
      expectTypeOf(split).toEqualTypeOf<SplitHandle>();
      expectTypeOf(split.descriptor).toEqualTypeOf<Json>();
      expectTypeOf(split.progress).toEqualTypeOf<Json>();
      await split.commit({ anything: [1, 'two', null] });
    },
  });
  expectTypeOf<SplitHandle>().toEqualTypeOf<SplitHandle<Json, Json>>();
  expectTypeOf<PlanResult>().toEqualTypeOf<PlanResult<Json>>();
  expectTypeOf<{ id: string; weight: number }>().toExtend<PlannedSplit>();
  expectTypeOf<{ id: string; weight: number }>().not.toExtend<PlannedSplit<FileSplit>>();
  expectTypeOf<{ id: string; weight: number }>().toExtend<PlannedSplit<FileSplit | null>>();

  // @ts-expect-error an interface is not Json (it has no index signature): use a type alias
  void startCoordinator<NotJson>({ ...base, planner: () => ({ splits: [], final: true }), handler: async () => undefined });
}

describe('typed jobs', () => {
  test('a typed job runs as an untyped one does', async () => {
    const store = new MemoryStore();
    const done: Record<string, Offset> = {};
    const handler: SplitHandler<FileSplit, Offset> = async (split) => {
      let offset = split.progress?.offset ?? 0;
      while (offset < split.descriptor.size) await split.commit({ offset: ++offset });
      done[split.descriptor.path] = { offset };
      await split.complete({ offset, digests: [] });
    };
    const fleet = await Promise.all(['a', 'b'].map((instance) =>
      startCoordinator({ store, job: 'typed', instance, maxInFlight: 2, planner: files, handler, logger: silentLogger })));
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
    await store.close();
    expect(done).toEqual({ a: { offset: 3 }, b: { offset: 5 } });
  });

  test('this file and examples/minimal.mjs type-check (every @ts-expect-error is used)', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    });
    if (!config) throw new Error('cannot read tsconfig.json');
    const options: ts.CompilerOptions = { ...config.options, noEmit: true, allowJs: true, checkJs: true };
    const host = ts.createCompilerHost(options);
    // The example imports the build (../dist/src/index.js): check it against the sources instead.
    const sourceIndex = join(root, 'src/index.ts');
    host.resolveModuleNameLiterals = (literals, containingFile, redirected, opts, containingSource) =>
      literals.map((literal) => {
        if (literal.text.endsWith('dist/src/index.js') && containingFile.startsWith(join(root, 'examples'))) {
          return { resolvedModule: { resolvedFileName: sourceIndex, extension: ts.Extension.Ts, isExternalLibraryImport: false } };
        }
        const mode = ts.getModeForUsageLocation(containingSource, literal, opts);
        return ts.resolveModuleName(literal.text, containingFile, opts, host, undefined, redirected, mode);
      });
    const files = [fileURLToPath(import.meta.url), join(root, 'examples/minimal.mjs')];
    const program = ts.createProgram({ rootNames: files, options, host });
    // Only these two files: the sources are `npm run typecheck`'s to check.
    const diagnostics = files.flatMap((f) => ts.getPreEmitDiagnostics(program, program.getSourceFile(f))).map((d) => {
      const where = d.file ? `${d.file.fileName.slice(root.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).toEqual([]);
  });
});
