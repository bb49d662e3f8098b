import { isIP } from "node:net";

// Who is the client, for the failed-authentication budget.
//
// X-Forwarded-For is written by whoever sends the request, so it is believed
// only as far as proxies we run have appended to it: with N trusted hops (a
// load balancer, an ingress), each appends the address it received the
// request from, and the client is the N-th entry from the right counting the
// socket's peer as the first. Entries further left are the client's own claim
// and are ignored, so a client cannot pick its budget by sending a header.
// With 0 hops (the default) the header is ignored entirely.
//
// An IPv6 client usually holds a whole /64 (one per household or VM), so it
// is one budget per /64: otherwise rotating through its 2^64 addresses would
// give it a fresh budget per guess.

export interface AddressSource {
  /** The TCP peer (Koa: ctx.req.socket.remoteAddress). */
  remoteAddress: string | undefined;
  /** The X-Forwarded-For header as received (several headers joined by commas), if any. */
  forwardedFor: string | undefined;
}

/** The budget key of the client: an IPv4 address, an IPv6 /64 (`2001:db8:1:2::/64`), or `unknown`. */
export function clientAddress(source: AddressSource, trustedProxyHops: number): string {
  const chain = (source.forwardedFor ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  chain.push(source.remoteAddress ?? "");
  // trustedProxyHops = 0: the peer; 1: the last entry, appended by our proxy; …
  // A shorter chain than configured: the leftmost entry is the furthest any
  // trusted proxy saw.
  const index = Math.max(0, chain.length - 1 - Math.min(trustedProxyHops, chain.length - 1));
  return budgetKeyOf(chain[index]!);
}

/** The budget key of one address as written by a proxy or the socket. */
export function budgetKeyOf(raw: string): string {
  const address = stripPort(raw.trim());
  const family = isIP(address);
  if (family === 4) return address;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!;
    return `${ipv6Prefix64(address)}::/64`;
  }
  // Not an address: everything unreadable shares one budget.
  return "unknown";
}

/** `1.2.3.4:5678` → `1.2.3.4`; `[2001:db8::1]:443` → `2001:db8::1`; a zone id is dropped. */
function stripPort(value: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed) return dropZone(bracketed[1]!);
  const v4WithPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(value);
  if (v4WithPort) return v4WithPort[1]!;
  return dropZone(value);
}

function dropZone(value: string): string {
  const percent = value.indexOf("%");
  return percent >= 0 ? value.slice(0, percent) : value;
}

/** The first four groups of an IPv6 address, without leading zeros (`2001:db8:0:1`). */
function ipv6Prefix64(address: string): string {
  let text = address.toLowerCase();
  // An embedded IPv4 tail (::1.2.3.4) is the last two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined];
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups];
  return groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(":");
}
