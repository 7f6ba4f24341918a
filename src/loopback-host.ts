/**
 * DNS-rebinding protection for the HTTP endpoints bound to loopback (the
 * dashboard, the metrics server): a page on another site can make a browser
 * resolve its own name to 127.0.0.1 and read what answers there, but the
 * request still carries that name in `Host`. A server bound to loopback
 * answers only a loopback `Host`; bound elsewhere, it is reached by whatever
 * name its operator gave it, and no check applies.
 */

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** Whether `host` names this machine's loopback interface. */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The hostname of a Host header (`name:port`, `[v6]:port`). */
export function hostnameOf(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const colon = header.lastIndexOf(':');
  return colon < 0 ? header : header.slice(0, colon);
}

/**
 * Why a request with `hostHeader` is refused by a server bound to `boundTo`, or undefined when it
 * is answered: only a server bound to loopback checks, and then only a loopback name passes.
 */
export function refusedHost(boundTo: string, hostHeader: string | undefined): string | undefined {
  if (!isLoopback(boundTo)) return undefined;
  const name = hostnameOf(hostHeader ?? '');
  return isLoopback(name) ? undefined : `refused: Host ${JSON.stringify(name)} is not a loopback name (the server is bound to ${boundTo})`;
}
