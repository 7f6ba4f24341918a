/**
 * How much of each event-loop stall of this process was its own work, phase
 * by phase (bench/fleet-host.ts): a 10 ms timer compares each gap between
 * its runs with the CPU time the main thread used in that gap
 * (`process.threadCpuUsage`, Node 22.19 and later). A stall is the gap's
 * delay past the interval; its own part is at most the CPU the thread used.
 *
 * Why: on the bench's 2-core machine the fleet itself holds the load at 5–7,
 * and a process with nothing to do (a probe) sees loop maxima of 30–120 ms.
 * A leader's loop max there mixes its own long turns with time it waited
 * for a core; the target is about the first. In a traced 10M run a
 * scavenge that took 2–9 ms in its neighbours took 84 ms once, with the same
 * bytes copied: the process was off the CPU.
 *
 * Each figure carries the page faults the process took in that stall
 * (`minorPageFault`, every thread's): on the bench's VM a first touch of a
 * page costs ~10 µs (`firstTouchUs`), so 3,000 faults are 30 ms of a stall's
 * own CPU that a host with ordinary page faults does not pay.
 *
 * Limits: the kernel counts a thread's CPU in scheduler ticks (4 ms here),
 * so each figure is ±4 ms; time the main thread spends waiting for GC
 * helper threads counts as waiting, not as its own.
 */
export interface OnCpuFigures {
  /** The largest own part of one stall (ms); null when the runtime cannot tell (Node 20). */
  maxOwnMs: number | null;
  /** That stall's delay (ms), for comparison with the loop's max. */
  maxOwnOfMs: number | null;
  /** The page faults the process took in that stall (minor: memory mapped on first touch). */
  maxOwnFaults: number | null;
}

/** One stall whose own part passed REPORT_OWN_MS: when it ended (µs on the clock of CPU profiles), its own part and its delay. */
export interface Stall {
  endUs: number;
  ownMs: number;
  delayMs: number;
  faults: number;
}

const INTERVAL_MS = 10;
/** Stalls with more than this much of the thread's own CPU are reported (`report`). */
export const REPORT_OWN_MS = 20;
type ThreadCpu = () => { user: number; system: number };

/**
 * Starts measuring; `take()` returns the figures since the last take and
 * starts a new phase. `report`, if given, is told of each stall with more
 * than REPORT_OWN_MS of the thread's own CPU (bench/stall-profile.ts finds
 * them in a CPU profile of the process: its timestamps are `hrtime`'s).
 */
export function onCpuStalls(report?: (stall: Stall) => void): { take: () => OnCpuFigures } {
  const threadCpu = (process as unknown as { threadCpuUsage?: ThreadCpu }).threadCpuUsage;
  if (typeof threadCpu !== 'function') return { take: () => ({ maxOwnMs: null, maxOwnOfMs: null, maxOwnFaults: null }) };
  const cpuMs = (): number => {
    const u = threadCpu.call(process);
    return (u.user + u.system) / 1000;
  };
  let at = performance.now();
  let cpu = cpuMs();
  let faults = process.resourceUsage().minorPageFault;
  let own = 0;
  let of = 0;
  let ownFaults = 0;
  setInterval(() => {
    const now = performance.now();
    const used = cpuMs();
    const faulted = process.resourceUsage().minorPageFault;
    const delay = now - at - INTERVAL_MS;
    const mine = Math.max(0, Math.min(delay, used - cpu));
    if (report !== undefined && mine > REPORT_OWN_MS) {
      report({ endUs: Number(process.hrtime.bigint() / 1000n), ownMs: Math.round(mine * 10) / 10, delayMs: Math.round(delay * 10) / 10, faults: faulted - faults });
    }
    if (mine > own) {
      own = mine;
      of = delay;
      ownFaults = faulted - faults;
    }
    at = now;
    cpu = used;
    faults = faulted;
  }, INTERVAL_MS).unref();
  return {
    take: () => {
      const taken = { maxOwnMs: Math.round(own * 10) / 10, maxOwnOfMs: Math.round(of * 10) / 10, maxOwnFaults: ownFaults };
      own = 0;
      of = 0;
      ownFaults = 0;
      return taken;
    },
  };
}

/**
 * What one first touch of a page costs this machine (µs per 4 KiB page): a
 * fresh 64 MiB array written once, less the same array written again. On
 * the bench's VM ~10 µs (2.6 ms a MiB), where a host with ordinary page
 * faults pays well under 1 µs; it scales every stall made of fresh memory.
 */
export function firstTouchUs(): number {
  const bytes = 64 << 20;
  const a = new Uint8Array(bytes);
  const t0 = performance.now();
  a.fill(1);
  const t1 = performance.now();
  a.fill(2);
  const t2 = performance.now();
  return Math.round(((t1 - t0 - (t2 - t1)) * 1000) / (bytes / 4096) * 10) / 10;
}
