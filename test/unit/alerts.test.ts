/**
 * docs/alerts.yml: its shape (a Prometheus rule file with the five documented
 * alerts, each with expr, for, severity, summary, description), and its
 * expressions evaluated against what real `Metrics` registries serve over a
 * simulated scrape timeline: the rules must fire in the failure and stay
 * quiet otherwise (a completion on any instance means the job moves).
 *
 * No YAML or PromQL dependency exists here (and no promtool), so the test
 * carries two deliberately small readers: a YAML subset (block maps and
 * lists, plain and double-quoted scalars, `|` blocks) that refuses anything
 * else, and a PromQL subset (selectors, rate/increase, sum/max/min by,
 * arithmetic, comparisons with a scalar, `and on`) with PromQL's precedence.
 */
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Metrics, type BacklogState } from '../../src/coordinator/metrics.js';

const RULES_FILE = new URL('../../docs/alerts.yml', import.meta.url);

// ---- a YAML subset --------------------------------------------------------------------------

type Yaml = string | Yaml[] | { [key: string]: Yaml };

function parseYaml(text: string): Yaml {
  if (text.includes('\t')) throw new Error('tabs are outside the subset');
  const lines = text.split('\n');
  let i = 0;
  const indentOf = (s: string) => s.length - s.trimStart().length;
  const skip = () => {
    while (i < lines.length && (lines[i]!.trim() === '' || lines[i]!.trimStart().startsWith('#'))) i++;
  };
  const scalar = (s: string, n: number): string => {
    if (s.startsWith('"')) return JSON.parse(s) as string;
    if (/^[{[&*!>'%@`]/.test(s) || s.includes(' #')) throw new Error(`line ${n}: '${s}' is outside the subset`);
    return s;
  };
  const block = (parentIndent: number): Yaml => {
    skip();
    const indent = indentOf(lines[i] ?? '');
    if (i >= lines.length || indent <= parentIndent) throw new Error(`line ${i + 1}: expected an indented block`);
    return lines[i]!.trimStart().startsWith('- ') ? seq(indent) : map(indent);
  };
  const seq = (indent: number): Yaml[] => {
    const out: Yaml[] = [];
    for (skip(); i < lines.length && indentOf(lines[i]!) === indent && lines[i]!.trimStart().startsWith('- '); skip()) {
      // "- key: v" is a map whose keys sit two columns right of the dash.
      lines[i] = `${lines[i]!.slice(0, indent)} ${lines[i]!.slice(indent + 1)}`;
      out.push(map(indent + 2));
    }
    return out;
  };
  const map = (indent: number): { [key: string]: Yaml } => {
    const out: { [key: string]: Yaml } = {};
    for (skip(); i < lines.length && indentOf(lines[i]!) >= indent; skip()) {
      const n = i + 1;
      if (indentOf(lines[i]!) > indent) throw new Error(`line ${n}: unexpected indentation`);
      const m = /^([A-Za-z_][\w-]*):(?: (.*))?$/.exec(lines[i]!.trim());
      if (!m) throw new Error(`line ${n}: expected 'key: value', got '${lines[i]!.trim()}'`);
      const [, key, rest] = m as unknown as [string, string, string | undefined];
      if (key in out) throw new Error(`line ${n}: duplicate key '${key}'`);
      i++;
      if (rest === undefined || rest === '') {
        out[key] = block(indent);
      } else if (rest === '|') {
        const body: string[] = [];
        while (i < lines.length && (lines[i]!.trim() === '' || indentOf(lines[i]!) > indent)) body.push(lines[i++]!);
        while (body.length > 0 && body[body.length - 1]!.trim() === '') body.pop();
        const cut = Math.min(...body.map(indentOf));
        out[key] = `${body.map((l) => l.slice(cut)).join('\n')}\n`;
      } else {
        out[key] = scalar(rest, n);
      }
    }
    return out;
  };
  const doc = map(0);
  skip();
  if (i < lines.length) throw new Error(`line ${i + 1}: unparsed content`);
  return doc;
}

// ---- a PromQL subset ------------------------------------------------------------------------

interface Sample { labels: Record<string, string>; value: number }
/** One scrape of every instance: at `t` seconds, every series served (name in `__name__`). */
interface Scrape { t: number; series: Sample[] }
type Value = number | Sample[];

type Node =
  | { kind: 'number'; value: number }
  | { kind: 'selector'; name: string; matchers: [string, string, string][]; range?: number }
  | { kind: 'call'; fn: 'rate' | 'increase'; arg: Node }
  | { kind: 'aggregate'; op: 'sum' | 'max' | 'min'; by: string[]; arg: Node }
  | { kind: 'binary'; op: string; on?: string[]; left: Node; right: Node };

function parsePromql(src: string): Node {
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

function evaluate(node: Node, scrapes: Scrape[], at: number): Value {
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
function parseExposition(text: string): Sample[] {
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

/** A fleet of instances of one job, each with its own registry, scraped once a minute. */
class Fleet {
  readonly members: Record<string, Metrics> = {};
  readonly scrapes: Scrape[] = [];
  t = 0;

  constructor(instances: string[]) {
    for (const instance of instances) this.members[instance] = new Metrics(new Registry(), { job: 'backfill', instance });
  }

  /** Runs `step` once a minute for `minutes`, scraping every instance after it. */
  async run(minutes: number, step: (minute: number) => void): Promise<void> {
    for (let k = 0; k < minutes; k++) {
      step(k);
      this.t += 60;
      const series: Sample[] = [];
      for (const m of Object.values(this.members)) series.push(...parseExposition(await m.registry.metrics()));
      this.scrapes.push({ t: this.t, series });
    }
  }

  /** The alert's result at the last scrape: one sample per firing group. */
  fires(expr: string): Record<string, string>[] {
    return (evaluate(parsePromql(expr), this.scrapes, this.t) as Sample[]).map((x) => x.labels);
  }
}

const backlog = (b: Partial<Record<BacklogState, number>>) =>
  Object.fromEntries((['queued', 'running', 'draining', 'completed', 'quarantined'] as const).map((s) => [s, { splits: b[s] ?? 0, weight: 10 * (b[s] ?? 0) }])) as Record<BacklogState, { splits: number; weight: number }>;

// ---- the tests --------------------------------------------------------------------------------

type Rule = { alert: string; expr: string; for: string; labels: { severity: string }; annotations: { summary: string; description: string } };
const file = parseYaml(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
const rules = Object.fromEntries(file.groups.flatMap((g) => g.rules).map((r) => [r.alert, r]));
const expr = (alert: string) => rules[alert]!.expr;

describe('docs/alerts.yml', () => {
  it('is a Prometheus rule file with the documented alerts, each complete', () => {
    expect(file.groups.map((g) => g.name)).toEqual(['splitfleet']);
    expect(Object.keys(rules).sort()).toEqual([
      'SplitfleetJobNotMoving', 'SplitfleetNoLeader', 'SplitfleetQuarantined', 'SplitfleetSessionLosses', 'SplitfleetStoreErrors',
    ]);
    for (const r of Object.values(rules)) {
      expect(Object.keys(r).sort(), r.alert).toEqual(['alert', 'annotations', 'expr', 'for', 'labels']);
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['page', 'warning'], r.alert).toContain(r.labels.severity);
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(10);
      expect(r.annotations.description.length, r.alert).toBeGreaterThan(10);
      expect(() => parsePromql(r.expr), r.alert).not.toThrow();
    }
  });

  it('names only series a Metrics registry serves', async () => {
    const served = new Set((await new Metrics().registry.getMetricsAsJSON()).flatMap((m) =>
      m.type === 'histogram' ? [`${m.name}_count`, `${m.name}_sum`, `${m.name}_bucket`] : [m.name]));
    const named = (n: Node): string[] => {
      switch (n.kind) {
        case 'number': return [];
        case 'selector': return [n.name];
        case 'call': case 'aggregate': return named(n.arg);
        case 'binary': return [...named(n.left), ...named(n.right)];
      }
    };
    for (const r of Object.values(rules)) for (const name of named(parsePromql(r.expr))) expect(served, `${r.alert}: ${name}`).toContain(name);
  });

  it('the YAML reader refuses what it does not understand (so the shape check cannot pass by accident)', () => {
    expect(() => parseYaml('a: {b: 1}\n')).toThrow(/subset/);
    expect(() => parseYaml('a:\n  b: 1\n   c: 2\n')).toThrow(/indentation/);
    expect(() => parseYaml('a: 1\na: 2\n')).toThrow(/duplicate/);
    expect(parseYaml('a:\n  - b: "x: y"\n    c: |\n      one\n        two\n')).toEqual({ a: [{ b: 'x: y', c: 'one\n  two\n' }] });
  });

  describe('SplitfleetJobNotMoving', () => {
    it('stays quiet while any instance completes, even when the leader itself completes nothing', async () => {
      const fleet = new Fleet(['pod-a', 'pod-b']);
      const { 'pod-a': leader, 'pod-b': worker } = fleet.members;
      await fleet.run(10, (k) => {
        leader!.isLeader.set(1);
        leader!.setBacklog(backlog({ queued: 20 - k, running: 4, completed: k }));
        worker!.completions.inc(); // one a minute, on pod-b only
      });
      expect(fleet.fires(expr('SplitfleetJobNotMoving'))).toEqual([]);
      // Per instance, the leader would look stuck: the sum over instances is what keeps it quiet.
      expect(fleet.fires('max by (job, instance) (splitfleet_backlog_splits{state="queued"}) > 0 and on (job, instance) rate(splitfleet_completions_total[5m]) == 0')).toEqual([{ job: 'backfill', instance: 'pod-a' }]);
    });

    it('fires when work is left and no instance completed anything for five minutes', async () => {
      const fleet = new Fleet(['pod-a', 'pod-b']);
      const { 'pod-a': leader, 'pod-b': worker } = fleet.members;
      await fleet.run(12, (k) => {
        leader!.setBacklog(backlog({ queued: 10, running: 4, completed: Math.min(k, 5) }));
        if (k < 5) worker!.completions.inc(); // then it stops: handlers hang
      });
      expect(fleet.fires(expr('SplitfleetJobNotMoving'))).toEqual([{ job: 'backfill' }]);
    });

    it('fires when only running splits are left (hung handlers), and not when the job is done', async () => {
      const hung = new Fleet(['pod-a']);
      await hung.run(8, () => hung.members['pod-a']!.setBacklog(backlog({ running: 3, completed: 9 })));
      expect(hung.fires(expr('SplitfleetJobNotMoving'))).toEqual([{ job: 'backfill' }]);

      const done = new Fleet(['pod-a']);
      await done.run(8, () => done.members['pod-a']!.setBacklog(backlog({ completed: 12 })));
      expect(done.fires(expr('SplitfleetJobNotMoving'))).toEqual([]);
    });

    it('counts only the current leader\'s backlog after a handover (the old one cleared its own)', async () => {
      const fleet = new Fleet(['pod-a', 'pod-b']);
      const { 'pod-a': a, 'pod-b': b } = fleet.members;
      await fleet.run(8, (k) => {
        if (k < 3) {
          a!.setBacklog(backlog({ queued: 5 }));
        } else {
          a!.clearBacklog(); // deposed
          b!.setBacklog(backlog({ completed: 5 }));
        }
        if (k < 3) b!.completions.inc();
      });
      // The job is done in the new leader's view; a stale queued 5 from pod-a would have fired.
      expect(fleet.fires(expr('SplitfleetJobNotMoving'))).toEqual([]);
    });
  });

  it('SplitfleetQuarantined fires on a quarantined split in the leader\'s backlog', async () => {
    const fleet = new Fleet(['pod-a']);
    await fleet.run(2, (k) => fleet.members['pod-a']!.setBacklog(backlog({ queued: 3, quarantined: k })));
    expect(fleet.fires(expr('SplitfleetQuarantined'))).toEqual([{ job: 'backfill' }]);
    const clean = new Fleet(['pod-a']);
    await clean.run(2, () => clean.members['pod-a']!.setBacklog(backlog({ queued: 3 })));
    expect(clean.fires(expr('SplitfleetQuarantined'))).toEqual([]);
  });

  it('SplitfleetSessionLosses names the instance that lost its session', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(6, (k) => {
      if (k === 3) fleet.members['pod-b']!.sessionLosses.inc();
    });
    expect(fleet.fires(expr('SplitfleetSessionLosses'))).toEqual([{ job: 'backfill', instance: 'pod-b' }]);
  });

  it('SplitfleetStoreErrors fires above 5% failing calls and ignores CLOSED at shutdown', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(6, () => {
      for (let n = 0; n < 100; n++) {
        fleet.members['pod-a']!.storeCall('txn', 0.002);
        fleet.members['pod-b']!.storeCall('txn', 0.002);
      }
      for (let n = 0; n < 10; n++) fleet.members['pod-a']!.storeError('txn', 'STORE_UNAVAILABLE');
      for (let n = 0; n < 50; n++) fleet.members['pod-b']!.storeError('get', 'CLOSED');
    });
    expect(fleet.fires(expr('SplitfleetStoreErrors'))).toEqual([{ job: 'backfill', instance: 'pod-a' }]);
  });

  it('SplitfleetNoLeader fires while no instance leads, not while one does', async () => {
    const fleet = new Fleet(['pod-a', 'pod-b']);
    await fleet.run(3, () => undefined);
    expect(fleet.fires(expr('SplitfleetNoLeader'))).toEqual([{ job: 'backfill' }]);
    await fleet.run(1, () => fleet.members['pod-b']!.isLeader.set(1));
    expect(fleet.fires(expr('SplitfleetNoLeader'))).toEqual([]);
  });
});
