/**
 * Input ↔ columnar buffers for the WASM engine, by job: layout.ts (the
 * mirror of assembly/layout.ts and memory views), members.ts (canonical
 * member tables), fields.ts (reading the caller's split objects whatever their
 * hidden classes), marshal.ts (the object form and its memo), results.ts
 * (reading decisions back) and columnar.ts (`ColumnarPool`). This file only
 * names them for the files that import "the codec" (wasm.ts, the
 * coordinator, the tests); it holds no code.
 */
export { EngineViews, I32_MAX, LAYOUT, type EngineMemory } from './layout.js';
export { memberTable, type MemberTable } from './members.js';
export { MarshalScratch, marshalInput, refuse, type InputMemo, type MarshalledInput } from './object/marshal.js';
export { orderCollisions, readAssignment, readAssignmentKept, readStats, repeatedAssignment, type OutputMemo } from './results.js';
export { ColumnarPool, type ColumnarDecision, type ColumnarSnapshot, type WrittenPool } from './columnar.js';
