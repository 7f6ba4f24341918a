/**
 * One job's Server-Sent Events stream: one `state` message now, then one per
 * refresh (the client replaces its whole view each time), until the client
 * leaves, the dashboard closes, or the client stops reading (its socket stays
 * full: stalled-stream.ts, and the connection is destroyed).
 *
 * Invariants: a view is serialised once for every stream (`dataOf`, the
 * job's ViewJson); a stream always runs `ended` once as it stops, so its
 * place among `maxClients` is freed.
 */
import type { HttpBindings } from '@hono/node-server';
import type { SSEStreamingApi } from 'hono/streaming';
import type { DashboardView } from '../inspect/dashboard-view.js';
import type { LiveJob } from '../inspect/live.js';
import { watchStream, type StallLimits, type StreamSample } from '../inspect/stalled-stream.js';

/** What `watchStream` reads of a response: what waits for its socket, and what the kernel has taken. */
function sampleOf(outgoing: HttpBindings['outgoing']): () => StreamSample {
  return () => {
    const socket = outgoing.socket;
    return { unsent: outgoing.writableLength, sent: socket ? socket.bytesWritten - socket.writableLength : 0 };
  };
}

/**
 * Sends `live`'s views on `stream` until it ends; `streams` holds each open stream's `end` (the
 * dashboard's close() calls them), `guard` the Node response to watch for a stall (absent when the
 * host's runtime gives none: then only the client leaving ends it).
 */
export async function sendViews(
  stream: SSEStreamingApi, live: LiveJob, dataOf: (view: DashboardView) => string, streams: Set<() => void>, ended: () => void,
  guard: { outgoing: HttpBindings['outgoing']; limits: StallLimits } | undefined,
): Promise<void> {
  let queued: DashboardView | undefined = live.view();
  let wake: (() => void) | undefined;
  let done = false;
  const end = () => {
    done = true;
    wake?.();
  };
  const unsubscribe = live.subscribe((view) => {
    queued = view;
    wake?.();
  });
  streams.add(end);
  stream.onAbort(end);
  const unwatch = guard === undefined ? () => undefined : watchStream(sampleOf(guard.outgoing), guard.limits, () => {
    end();
    ended();
    guard.outgoing.destroy();
  });
  try {
    while (!done) {
      if (queued !== undefined) {
        const view = queued;
        queued = undefined;
        await stream.writeSSE({ event: 'state', data: dataOf(view), id: String(view.generatedAt) });
        continue;
      }
      // Wake on the next view, the client leaving or close(); a comment every 15 s keeps idle proxies from cutting the stream.
      await new Promise<void>((resolve) => {
        const ping = setTimeout(resolve, 15_000);
        wake = () => {
          clearTimeout(ping);
          resolve();
        };
      });
      wake = undefined;
      if (!done && queued === undefined) await stream.write(': ping\n\n');
    }
  } finally {
    unwatch();
    unsubscribe();
    streams.delete(end);
    ended();
  }
}
