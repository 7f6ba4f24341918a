/**
 * Failure reasons: what a failure report writes on a split record (and a
 * quarantine keeps) is at most REASON_MAX_BYTES of UTF-8, so a handler that
 * throws an Error with a 2 MB message still lands its report far under the
 * store's request limit. A longer reason is cut at a code point boundary and
 * ends with a marker naming its full size.
 *
 * Pure.
 */

/** The most bytes (UTF-8) of a failure reason written to the store, marker included. */
export const REASON_MAX_BYTES = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `reason` as written: itself when it fits, else its head and `… [truncated, N bytes]` (N: its full UTF-8 size). */
export function boundReason(reason: string, maxBytes = REASON_MAX_BYTES): string {
  // Cheap exit: a UTF-8 encoding is at most 3 bytes per UTF-16 unit.
  if (reason.length * 3 <= maxBytes) return reason;
  const bytes = encoder.encode(reason);
  if (bytes.length <= maxBytes) return reason;
  const marker = ` … [truncated, ${bytes.length} bytes]`;
  let cut = Math.max(0, maxBytes - encoder.encode(marker).length);
  // Back up over continuation bytes (10xxxxxx): the cut lands before a code point, never inside one.
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return decoder.decode(bytes.subarray(0, cut)) + marker;
}
