#!/usr/bin/env node
// Generates docs/api.md from the public surface: every name src/index.ts
// exports, in the order and sections of that file, with its signature and
// its TSDoc, read through the TypeScript compiler API (no other dependency).
//
//   npm run docs            # writes docs/api.md
//   node scripts/api-docs.mjs --check   # exits 1 when docs/api.md is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'src/index.ts');
const target = join(root, 'docs/api.md');

const program = ts.createProgram([entry], {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  skipLibCheck: true,
  types: ['node'],
});
const checker = program.getTypeChecker();
const source = program.getSourceFile(entry);
if (!source) throw new Error(`cannot read ${entry}`);

const FORMAT = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope;

/** TSDoc text of a symbol, with its tags as a short list. */
function docOf(symbol) {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  const tags = symbol.getJsDocTags(checker)
    .map((t) => `*@${t.name}*${t.text ? ` ${ts.displayPartsToString(t.text)}` : ''}`);
  return [text, ...tags].filter((s) => s !== '').join('\n\n');
}

function where(decl) {
  return relative(root, decl.getSourceFile().fileName);
}

/** The printed text of a declaration without its body and doc comments. */
function printed(node) {
  const printer = ts.createPrinter({ removeComments: true, omitTrailingSemicolon: false });
  return printer.printNode(ts.EmitHint.Unspecified, node, node.getSourceFile()).trim();
}

function memberLines(symbol) {
  const lines = [];
  const members = symbol.members ? [...symbol.members.values()] : [];
  for (const m of members) {
    const decl = m.declarations?.[0];
    if (!decl) continue;
    const mods = ts.canHaveModifiers(decl) ? ts.getModifiers(decl) ?? [] : [];
    if (mods.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword)) continue;
    if (m.name.startsWith('#') || m.name === '__constructor') continue;
    let sig;
    if (ts.isMethodDeclaration(decl) || ts.isMethodSignature(decl)) {
      const type = checker.getTypeOfSymbolAtLocation(m, decl);
      sig = type.getCallSignatures().map((s) => `${m.name}${checker.signatureToString(s, decl, FORMAT)}`).join('\n');
    } else if (ts.isGetAccessorDeclaration(decl)) {
      sig = `get ${m.name}(): ${checker.typeToString(checker.getTypeOfSymbolAtLocation(m, decl), decl, FORMAT)}`;
    } else if (ts.isPropertyDeclaration(decl) || ts.isPropertySignature(decl)) {
      const ro = mods.some((x) => x.kind === ts.SyntaxKind.ReadonlyKeyword) ? 'readonly ' : '';
      const opt = decl.questionToken ? '?' : '';
      const typeText = decl.type ? decl.type.getText() : checker.typeToString(checker.getTypeOfSymbolAtLocation(m, decl), decl, FORMAT);
      sig = `${ro}${m.name}${opt}: ${typeText.replace(/\s+/g, ' ')}`;
    } else {
      continue;
    }
    const doc = docOf(m).replace(/\n+/g, ' ');
    lines.push(`- \`${sig}\`${doc ? ` — ${doc}` : ''}`);
  }
  return lines;
}

function describe(name, alias) {
  const symbol = alias.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(alias) : alias;
  const decl = symbol.declarations?.[0];
  const out = [`### \`${name}\``, ''];
  if (!decl) return out;
  let kind;
  let code;
  let members = [];
  if (ts.isFunctionDeclaration(decl)) {
    kind = 'function';
    const type = checker.getTypeOfSymbolAtLocation(symbol, decl);
    code = type.getCallSignatures().map((s) => `function ${name}${checker.signatureToString(s, decl, FORMAT)}`).join('\n');
  } else if (ts.isClassDeclaration(decl)) {
    kind = 'class';
    const heritage = decl.heritageClauses?.map((h) => h.getText()).join(' ') ?? '';
    code = `class ${name}${heritage ? ` ${heritage}` : ''}`;
    const ctor = decl.members.find((m) => ts.isConstructorDeclaration(m));
    if (ctor && !(ts.getModifiers(ctor) ?? []).some((x) => x.kind === ts.SyntaxKind.PrivateKeyword)) {
      const params = ctor.parameters
        .map((p) => p.getText().replace(/^((private|protected|public|readonly)\s+)+/, '').replace(/\s+/g, ' '));
      code += `\nconstructor(${params.join(', ')})`;
    }
    members = memberLines(symbol);
  } else if (ts.isInterfaceDeclaration(decl)) {
    kind = 'interface';
    const heritage = decl.heritageClauses?.map((h) => h.getText()).join(' ') ?? '';
    code = `interface ${name}${decl.typeParameters ? `<${decl.typeParameters.map((p) => p.getText()).join(', ')}>` : ''}${heritage ? ` ${heritage}` : ''}`;
    members = memberLines(symbol);
  } else if (ts.isTypeAliasDeclaration(decl)) {
    kind = 'type';
    code = printed(ts.factory.updateTypeAliasDeclaration(decl, undefined, decl.name, decl.typeParameters, decl.type))
      .replace(/^type /, `type `);
  } else if (ts.isVariableDeclaration(decl)) {
    kind = 'const';
    const type = checker.getTypeOfSymbolAtLocation(symbol, decl);
    code = `const ${name}: ${checker.typeToString(type, decl, FORMAT)}`;
  } else {
    kind = ts.SyntaxKind[decl.kind];
    code = name;
  }
  out.push(`*${kind}*, from \`${where(decl)}\``, '', '```ts', code, '```', '');
  const doc = docOf(symbol);
  if (doc) out.push(doc, '');
  if (members.length > 0) out.push(...members, '');
  return out;
}

// Sections: the `// Heading.` comment above each group of exports in src/index.ts.
const sections = [];
for (const statement of source.statements) {
  if (!ts.isExportDeclaration(statement) || !statement.exportClause || !ts.isNamedExports(statement.exportClause)) continue;
  const comments = ts.getLeadingCommentRanges(source.text, statement.getFullStart()) ?? [];
  const heading = comments
    .map((c) => source.text.slice(c.pos, c.end))
    .filter((t) => t.startsWith('//'))
    .map((t) => t.replace(/^\/\/\s*/, '').replace(/\.$/, ''))
    .pop();
  if (heading !== undefined || sections.length === 0) sections.push({ heading: heading ?? 'Exports', names: [] });
  for (const el of statement.exportClause.elements) {
    sections[sections.length - 1].names.push({ name: el.name.text, symbol: checker.getSymbolAtLocation(el.name) });
  }
}

const lines = [
  '# API reference',
  '',
  '<!-- Generated by scripts/api-docs.mjs from src/index.ts and the TSDoc of each export: `npm run docs`. Do not edit by hand. -->',
  '',
  'Everything `splitfleet` exports, by name (`import { startCoordinator, EtcdStore } from \'splitfleet\'`),',
  'in the sections of `src/index.ts`. The README has a complete example; docs/concepts.md explains the words.',
  '',
  '## Contents',
  '',
];
// GitHub's heading anchors: lowercased, and a repeated one (`op` and `Op`) gets -1, -2, ...
const anchors = new Map();
const anchor = (name) => {
  const base = name.toLowerCase().replace(/[^a-z0-9_ -]/g, '').replace(/ /g, '-');
  const n = anchors.get(base) ?? 0;
  anchors.set(base, n + 1);
  return n === 0 ? base : `${base}-${n}`;
};
for (const s of sections) {
  lines.push(`- **${s.heading}**: ${s.names.map((n) => `[\`${n.name}\`](#${anchor(n.name)})`).join(', ')}`);
}
lines.push('');
for (const s of sections) {
  lines.push(`## ${s.heading}`, '');
  for (const { name, symbol } of s.names) {
    if (!symbol) continue;
    lines.push(...describe(name, symbol));
  }
}
const text = `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // missing counts as stale
  }
  if (current !== text) {
    console.error('docs/api.md is stale: run `npm run docs`');
    process.exit(1);
  }
  console.log('docs/api.md is up to date');
} else {
  writeFileSync(target, text);
  console.log(`wrote ${relative(root, target)} (${sections.reduce((n, s) => n + s.names.length, 0)} exports)`);
}
