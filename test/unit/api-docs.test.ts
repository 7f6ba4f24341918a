/**
 * The API reference's check (docs/decisions/0013-api-reference-typedoc.md):
 * TypeDoc, on the configuration `npm run docs` uses, with nothing emitted,
 * must report no warning and no error. So CI fails when an export has no
 * TSDoc, a public signature names a type the package does not export, a
 * `{@link}` or relative path is broken, or an entry of typedoc.json's
 * intentionallyNotDocumented / intentionallyNotExported lists went stale.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Application, Logger, LogLevel, PackageJsonReader, TSConfigReader, TypeDocReader } from 'typedoc';
import { expect, test } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Keeps every message at warning level or above (and still counts them). */
class CapturingLogger extends Logger {
  readonly messages: string[] = [];
  override log(message: string, level: LogLevel): void {
    super.log(message, level);
    if (level >= LogLevel.Warn) this.messages.push(`[${LogLevel[level]}] ${message}`);
  }
}

test('typedoc documents the public surface without a warning', async () => {
  const app = await Application.bootstrapWithPlugins(
    { options: join(root, 'typedoc.json'), emit: 'none' },
    [new TypeDocReader(), new PackageJsonReader(), new TSConfigReader()],
  );
  // Reading the options logs through the default logger: nothing may have gone wrong there either.
  expect(app.logger.hasErrors() || app.logger.hasWarnings(), 'typedoc.json or tsconfig.json was refused (see stderr)').toBe(false);
  const logger = new CapturingLogger();
  app.logger = logger;
  const project = await app.convert();
  expect(project, logger.messages.join('\n')).toBeDefined();
  app.validate(project!);
  expect(logger.messages).toEqual([]);
  // Not vacuous: the entry points were read (one module each: index is `splitfleet`).
  expect(project!.getChildByName(['index', 'startCoordinator'])).toBeDefined();
  for (const entry of ['etcd', 'http', 'engine']) expect(project!.getChildByName(entry), entry).toBeDefined();
}, 120_000);
