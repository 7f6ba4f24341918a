/**
 * Loads prom-client for `Metrics` (metrics.ts), once, on first use, from the files of the parts
 * splitfleet uses rather than the package's index (decision 0077). The only file that imports
 * prom-client (test/unit/architecture.test.ts, PACKAGE_HOMES): metrics.ts takes the parts and the
 * `Registry` type from here. Must not be called at module load: `import 'splitfleet'` loads no
 * prom-client (test/unit/package/entry-points.test.ts checks which of its files a first `Metrics` loads).
 */
import { createRequire } from 'node:module';

export type { Registry } from 'prom-client';

type PromClient = typeof import('prom-client');
/** What splitfleet uses of prom-client. */
export type PromParts = Pick<PromClient, 'Registry' | 'Counter' | 'Gauge' | 'Histogram' | 'collectDefaultMetrics'>;
let loaded: PromParts | undefined;
/**
 * prom-client, loaded on first use (CommonJS, so synchronously), from the files of the parts
 * splitfleet uses: the package's index also loads the Pushgateway (http, https, zlib) and the
 * cluster aggregator, 8-10× the load time (about 75 ms against 8 ms on this 2-core machine), and
 * the first `Metrics` is on every coordinator's way to its first split (issue 47, start-up).
 * They are the index's own classes (one file, one module), so a registry made from
 * `require('prom-client')` is one of ours. Where the files cannot be reached (an `exports` map in
 * a later major), the index.
 */
export function loadPromClient(): PromParts {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  try {
    loaded = {
      Registry: require('prom-client/lib/registry') as PromClient['Registry'],
      Counter: require('prom-client/lib/counter') as PromClient['Counter'],
      Gauge: require('prom-client/lib/gauge') as PromClient['Gauge'],
      Histogram: require('prom-client/lib/histogram') as PromClient['Histogram'],
      // Only with `defaultMetrics`: loaded then.
      collectDefaultMetrics: ((...args) => (require('prom-client/lib/defaultMetrics') as PromClient['collectDefaultMetrics'])(...args)) as PromClient['collectDefaultMetrics'],
    };
  } catch {
    loaded = require('prom-client') as PromClient;
  }
  return loaded;
}
