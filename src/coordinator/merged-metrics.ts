/**
 * One Prometheus exposition of several registries (a serving process's jobs,
 * decision 0068): each job's coordinator records into a registry of its own
 * (its series labelled `splitfleet_job`), and a scrape must see one family per
 * metric name, its HELP and TYPE once, with every job's samples under it. A
 * plain concatenation would repeat `# HELP`/`# TYPE` for a name, which
 * Prometheus refuses as a second family of the same name; prom-client's
 * `Registry.merge` refuses a name registered twice. So the texts are merged:
 * families in the order first seen, samples in the order of the sources.
 *
 * Invariant: every sample line stays under the family it came under; a
 * sample before any `# HELP`/`# TYPE` (not written by prom-client) keeps its
 * own untyped family, named by its metric name.
 */

/** What serves Prometheus text: a prom-client `Registry` or anything shaped like one. */
export interface ExpositionSource {
  /** The `Content-Type` the text is served with. */
  readonly contentType: string;
  /** The exposition text of every series, read now. */
  metrics(): Promise<string>;
}

/** The text format prom-client's default registry writes (version 0.0.4). */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

interface Family { help?: string; type?: string; samples: string[] }

/** Merges exposition texts into one: one family per metric name. */
export function mergeExpositions(texts: readonly string[]): string {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { samples: [] }));
    return f;
  };
  for (const text of texts) {
    let current: Family | undefined;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)(?: |$)/.exec(line);
      if (meta) {
        current = family(meta[2]!);
        // The first source's HELP and TYPE stand: the same code wrote every job's.
        if (meta[1] === 'HELP') current.help ??= line;
        else current.type ??= line;
        continue;
      }
      if (line.startsWith('#')) continue; // a comment: not part of any family
      current ??= family(/^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? line);
      current.samples.push(line);
    }
  }
  const out: string[] = [];
  for (const f of families.values()) {
    out.push([...(f.help ? [f.help] : []), ...(f.type ? [f.type] : []), ...f.samples].join('\n'));
  }
  return out.length === 0 ? '' : `${out.join('\n\n')}\n`;
}

/**
 * A source whose registries are read at each scrape (`sources()`: the jobs
 * served now), merged. A gauge family of the caller's own (`extra`) goes
 * first: the serving process's figures that no job's registry has.
 */
export function mergedSource(sources: () => readonly ExpositionSource[], extra: () => string = () => ''): ExpositionSource {
  return {
    contentType: PROMETHEUS_TEXT,
    metrics: async () => mergeExpositions([extra(), ...(await Promise.all(sources().map((s) => s.metrics())))]),
  };
}
