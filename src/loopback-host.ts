/**
 * DNS-rebinding protection for the HTTP endpoints bound to loopback (the
 * dashboard, the metrics server): a page on another site can make a browser
 * resolve its own name to 127.0.0.1 and read what answers there, but the
 * request still carries that name in `Host`. A server bound to loopback
 * answers only a loopback `Host`; bound elsewhere, it is reached by whatever
 * name its operator gave it, and no check applies.
 *
 * Loopback is `localhost`, 127.0.0.0/8 and ::1, and an IPv4-mapped 127.x.y.z
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`): a dual-stack socket reaches the same
 * interface through it (decision 0051). Pure: no I/O, no lookup of a name.
 */

const IPV4_LOOPBACK = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
/** ::1, and ::ffff:127.x.y.z, as the URL standard writes them (the mapped address in hex). */
const IPV6_LOOPBACK = /^\[(?:::1|::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4})\]$/;

/** Whether `host` (a name, or an address with or without IPv6 brackets) names this machine's loopback interface. */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase();
  if (name === 'localhost' || IPV4_LOOPBACK.test(name)) return true;
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  // Hex digits, colons and dots only: nothing else may reach the URL parser below.
  if (!bare.includes(':') || !/^[0-9a-f:.]+$/.test(bare)) return false;
  try {
    // One spelling for the many of an IPv6 address: 0:0:0:0:0:ffff:127.0.0.1 → [::ffff:7f00:1].
    return IPV6_LOOPBACK.test(new URL(`http://[${bare}]/`).hostname);
  } catch {
    return false;
  }
}

/** The hostname of a Host header (`name:port`, `[v6]:port`, or a bare IPv6 address, which has no port). */
export function hostnameOf(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const colon = header.lastIndexOf(':');
  if (colon !== header.indexOf(':')) return header;
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
