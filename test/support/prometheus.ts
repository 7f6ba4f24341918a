/**
 * Readers for checking docs/alerts.yml against real registries without
 * promtool: the file through the `yaml` package (strict: any error or warning
 * fails, duplicate keys included), a deliberately small PromQL subset (selectors,
 * rate/increase, sum/max/min by, arithmetic, comparisons with a scalar,
 * `and on`) with PromQL's precedence, the text exposition format, and a
 * scrape timeline of several registries. Not a Prometheus: no counter
 * resets, no staleness. Used by test/unit/alerts.test.ts and the pause test.
 */
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { Metrics, type BacklogState } from '../../src/coordinator/metrics.js';

// ---- YAML, through the yaml package -------------------------------------------------------

/** Parses `text` as one YAML document; any error or warning (a duplicate key, a tab, a bad indent) throws. */
export function parseYaml(text: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: true, strict: true, prettyErrors: true });
  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length > 0) throw new Error(problems.map((p) => p.message).join('\n'));
  return doc.toJS();
}

// ---- a PromQL subset ------------------------------------------------------------------------

export interface Sample { labels: Record<string, string>; value: number }
/** One scrape of every instance: at `t` seconds, every series served (name in `__name__`). */
export interface Scrape { t: number; series: Sample[] }
export type Value = number | Sample[];

export type Node =
  | { kind: 'number'; value: number }
  | { kind: 'selector'; name: string; matchers: [string, string, string][]; range?: number }
  | { kind: 'call'; fn: 'rate' | 'increase'; arg: Node }
  | { kind: 'aggregate'; op: 'sum' | 'max' | 'min'; by: string[]; arg: Node }
  | { kind: 'binary'; op: string; on?: string[]; left: Node; right: Node };

export function parsePromql(src: string): Node {
  const tokens = src.match(/\d+[smh]\b|\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|[A-Za-z_:][\w:]*|==|!=|=~|!~|>=|<=|[(){}[\],=<>/*+-]/g) ?? [];
  if (tokens.join('') !== src.replace(/\s+/g, '')) throw new Error(`unsupported characters in '${src}'`);
  let p = 0;
  const peek = () => tokens[p];
  const next = (want?: string) => {
    const t = tokens[p++];
    if (t === undefined || (want !== undefined && t !== want)) throw new Error(`expected '${want ?? 'a token'}' at token ${p} of '${src}', got '${t}'`);
    return t;
  };
  const labelList = () => {
    next('(');
    const out: string[] = [];
    while (peek() !== ')') {
      out.push(next());
      if (peek() === ',') next();
    }
    next(')');
    return out;
  };
  const levels = [['or'], ['and'], ['==', '!=', '>', '<', '>=', '<='], ['+', '-'], ['*', '/']];
  const binary = (level: number): Node => {
    if (level === levels.length) return primary();
    let left = binary(level + 1);
    while (levels[level]!.includes(peek() ?? '')) {
      const op = next();
      const on = peek() === 'on' ? (next(), labelList()) : undefined;
      const right = binary(level + 1);
      left = on ? { kind: 'binary', op, on, left, right } : { kind: 'binary', op, left, right };
    }
    return left;
  };
  const primary = (): Node => {
    const t = next();
    if (t === '(') {
      const inner = binary(0);
      next(')');
      return inner;
    }
    if (/^\d/.test(t)) return { kind: 'number', value: Number(t) };
    if (t === 'rate' || t === 'increase') {
      next('(');
      const arg = primary();
      next(')');
      if (arg.kind !== 'selector' || arg.range === undefined) throw new Error(`${t}() needs a range selector`);
      return { kind: 'call', fn: t, arg };
    }
    if (t === 'sum' || t === 'max' || t === 'min') {
      const by = peek() === 'by' ? (next(), labelList()) : [];
      next('(');
      const arg = binary(0);
      next(')');
      return { kind: 'aggregate', op: t, by, arg };
    }
    const matchers: [string, string, string][] = [];
    if (peek() === '{') {
      next();
      while (peek() !== '}') {
        const label = next();
        const op = next();
        matchers.push([label, op, JSON.parse(next()) as string]);
        if (peek() === ',') next();
      }
      next('}');
    }
    let range: number | undefined;
    if (peek() === '[') {
      next();
      const d = next();
      range = Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[d.slice(-1) as 's' | 'm' | 'h'];
      next(']');
    }
    return range === undefined ? { kind: 'selector', name: t, matchers } : { kind: 'selector', name: t, matchers, range };
  };
  const root = binary(0);
  if (p !== tokens.length) throw new Error(`unparsed tokens in '${src}' from '${tokens[p]}'`);
  return root;
}

const keyOf = (labels: Record<string, string>, only?: string[]) =>
  JSON.stringify(Object.entries(labels).filter(([k]) => k !== '__name__' && (!only || only.includes(k))).sort());

export function evaluate(node: Node, scrapes: Scrape[], at: number): Value {
  const selected = (sel: Extract<Node, { kind: 'selector' }>, s: Scrape) =>
    s.series.filter((x) => x.labels.__name__ === sel.name && sel.matchers.every(([l, op, v]) => {
      const have = x.labels[l] ?? '';
      if (op === '=') return have === v;
      if (op === '!=') return have !== v;
      if (op === '=~') return new RegExp(`^(?:${v})$`).test(have);
      if (op === '!~') return !new RegExp(`^(?:${v})$`).test(have);
      throw new Error(`matcher ${op}`);
    }));
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'selector': {
      const latest = scrapes.filter((s) => s.t <= at && s.t > at - 300).at(-1); // 5 min lookback
      return latest ? selected(node, latest).map((x) => ({ labels: x.labels, value: x.value })) : [];
    }
    case 'call': {
      const sel = node.arg as Extract<Node, { kind: 'selector' }>;
      const window = scrapes.filter((s) => s.t <= at && s.t > at - sel.range!);
      const bySeries = new Map<string, { labels: Record<string, string>; points: [number, number][] }>();
      for (const s of window) {
        for (const x of selected(sel, s)) {
          const k = keyOf(x.labels);
          const e = bySeries.get(k) ?? { labels: x.labels, points: [] };
          e.points.push([s.t, x.value]);
          bySeries.set(k, e);
        }
      }
      const out: Sample[] = [];
      for (const { labels, points } of bySeries.values()) {
        if (points.length < 2) continue;
        const [t0, v0] = points[0]!;
        const [t1, v1] = points.at(-1)!;
        const increase = ((v1 - v0) * sel.range!) / (t1 - t0); // extrapolated to the window, as Prometheus does
        const { __name__: _, ...rest } = labels;
        out.push({ labels: rest, value: node.fn === 'rate' ? increase / sel.range! : increase });
      }
      return out;
    }
    case 'aggregate': {
      const groups = new Map<string, Sample>();
      for (const x of evaluate(node.arg, scrapes, at) as Sample[]) {
        const labels = Object.fromEntries(node.by.filter((l) => x.labels[l] !== undefined).map((l) => [l, x.labels[l]!]));
        const k = keyOf(labels);
        const g = groups.get(k);
        if (!g) groups.set(k, { labels, value: x.value });
        else g.value = node.op === 'sum' ? g.value + x.value : node.op === 'max' ? Math.max(g.value, x.value) : Math.min(g.value, x.value);
      }
      return [...groups.values()];
    }
    case 'binary': {
      const l = evaluate(node.left, scrapes, at);
      const r = evaluate(node.right, scrapes, at);
      const apply = (a: number, b: number): number | boolean => {
        switch (node.op) {
          case '==': return a === b;
          case '!=': return a !== b;
          case '>': return a > b;
          case '<': return a < b;
          case '>=': return a >= b;
          case '<=': return a <= b;
          case '+': return a + b;
          case '-': return a - b;
          case '*': return a * b;
          case '/': return a / b;
          default: throw new Error(`operator ${node.op}`);
        }
      };
      if (node.op === 'and') {
        const keys = new Set((r as Sample[]).map((x) => keyOf(x.labels, node.on)));
        return (l as Sample[]).filter((x) => keys.has(keyOf(x.labels, node.on)));
      }
      // A comparison filters the vector; arithmetic maps it (vector op scalar, or one-to-one on equal labels).
      const combine = (x: Sample, b: number): Sample[] => {
        const v = apply(x.value, b);
        if (typeof v === 'boolean') return v ? [x] : [];
        return [{ labels: x.labels, value: v }];
      };
      if (typeof r === 'number' && Array.isArray(l)) return l.flatMap((x) => combine(x, r));
      if (Array.isArray(l) && Array.isArray(r)) {
        const right = new Map(r.map((x) => [keyOf(x.labels, node.on), x.value]));
        return l.flatMap((x) => (right.has(keyOf(x.labels, node.on)) ? combine(x, right.get(keyOf(x.labels, node.on))!) : []));
      }
      throw new Error('scalar-scalar and scalar-vector operations are outside the subset');
    }
  }
}

// ---- scrapes of real registries ---------------------------------------------------------------

/** Prometheus text exposition, as a scrape reads it (default labels included). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`cannot read exposition line '${line}'`);
    const labels: Record<string, string> = { __name__: m[1]! };
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = JSON.parse(`"${v}"`) as string;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * A fleet of instances of one job, each with its own registry labelled
 * `splitfleet_job`, scraped once a minute as Prometheus would: each sample
 * gets the target labels `job` (the scrape job's name) and `instance`.
 */
export class Fleet {
  readonly members: Record<string, Metrics> = {};
  readonly scrapes: Scrape[] = [];
  t = 0;

  constructor(instances: string[]) {
    for (const instance of instances) this.members[instance] = new Metrics({ labels: { splitfleet_job: 'backfill' } });
  }

  /** Runs `step` once a minute for `minutes`, scraping every instance after it. */
  async run(minutes: number, step: (minute: number) => void): Promise<void> {
    for (let k = 0; k < minutes; k++) {
      step(k);
      this.t += 60;
      const series: Sample[] = [];
      for (const [instance, m] of Object.entries(this.members)) series.push(...scraped(await m.registry.metrics(), instance));
      this.scrapes.push({ t: this.t, series });
    }
  }

  /** The alert's result at the last scrape: one sample per firing group. */
  fires(expr: string): Record<string, string>[] {
    return (evaluate(parsePromql(expr), this.scrapes, this.t) as Sample[]).map((x) => x.labels);
  }
}

/** One target's exposition as Prometheus stores it: with the target labels `job` (the scrape job, `splitfleet`) and `instance`. */
export function scraped(text: string, instance: string): Sample[] {
  return parseExposition(text).map((s) => ({ ...s, labels: { ...s.labels, job: 'splitfleet', instance } }));
}

export const backlog = (b: Partial<Record<BacklogState, number>>) =>
  Object.fromEntries((['queued', 'running', 'draining', 'completed', 'quarantined'] as const).map((s) => [s, { splits: b[s] ?? 0, weight: 10 * (b[s] ?? 0) }])) as Record<BacklogState, { splits: number; weight: number }>;


/** One alerting rule of docs/alerts.yml. */
export type Rule = { alert: string; expr: string; for: string; labels: { severity: string }; annotations: { summary: string; description: string } };

/** The rules of docs/alerts.yml, by alert name. */
export function alertRules(): { file: { groups: { name: string; rules: Rule[] }[] }; rules: Record<string, Rule> } {
  const file = parseYaml(readFileSync(new URL('../../docs/alerts.yml', import.meta.url), 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
  return { file, rules: Object.fromEntries(file.groups.flatMap((g) => g.rules).map((r) => [r.alert, r])) };
}
