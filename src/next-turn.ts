/**
 * A later turn of the event loop. Work that shares a process's loop with
 * its etcd session (seeding, the queue head's build, page decodes, reading a
 * caller's input) runs in slices and awaits this between them, so that
 * keep-alives, watch events and replies are served in between.
 *
 * Why `setImmediate`: it resolves in the loop's check phase, after the I/O
 * callbacks that were ready; a resolved promise would run before them, as
 * part of the same turn.
 */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
