/** Declarations of store-log.mjs (plain JavaScript: it runs inside the fleet members too). */
/** Patches `target`'s txn, get and list to log every call to `path`; returns a function that closes the file. */
export function instrument(target: object, path: string, process: string): () => void;
