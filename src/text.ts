/**
 * The command line's text: how `splitfleet inspect` and the operator
 * commands render reports, splits and changes for a terminal, and make store
 * text printable (decision 0030). Not a public entry point: the CLI's own
 * output, kept off `splitfleet`'s root (issue 51: the root exports what a
 * user calls; a program reads the data with `jobReport`, `readJobReport`,
 * `readSplitPage` and renders it its own way).
 */
export { renderReport } from './inspect/render.js';
export type { RenderOptions } from './inspect/render.js';
export { printable, printableJson } from './inspect/printable.js';
export { describeChange } from './inspect/changes.js';
export { renderSplit, renderSplitTable } from './inspect/splits.js';
export { renderSummaryReport } from './inspect/summary-render.js';
export { alignColumns, displayWidth } from './inspect/width.js';
