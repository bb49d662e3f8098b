import { createHash } from "node:crypto";
import { isIP, isIPv4 } from "node:net";

/**
 * The client's address as the gateway can trust it. With `trustedHops` = 0
 * it is the connection's peer and X-Forwarded-For is ignored (anyone can
 * write that header). With n trusted proxies in front, each appending the
 * address it received the request from, the client is the n-th entry from
 * the right: entries further left were written by the client itself. Fewer
 * entries than hops (a request that skipped a proxy) take the leftmost; an
 * entry that is no IP address falls back to the peer.
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | undefined, trustedHops: number): string {
  const fallback = peer ?? "unknown";
  if (trustedHops === 0 || !forwardedFor) return fallback;
  const entries = forwardedFor
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) return fallback;
  const chosen = stripPort(entries[Math.max(entries.length - trustedHops, 0)]!);
  return isIP(chosen) ? chosen : fallback;
}

/** `[2001:db8::1]:443` and `203.0.113.7:443` (some proxies add ports) without the port. */
function stripPort(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(entry);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry);
  return v4 ? v4[1]! : entry;
}

/**
 * The unit one failure budget counts: an IPv4 address, or the /64 of an IPv6
 * address (one subscriber line or host gets a whole /64, so counting single
 * IPv6 addresses would give an attacker 2^64 budgets). IPv4-mapped IPv6
 * (`::ffff:203.0.113.7`, how a dual-stack socket reports IPv4 peers) is IPv4.
 */
export function addressUnit(address: string): string {
  const zoneless = address.replace(/%.*$/, "");
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(zoneless);
  if (mapped) return mapped[1]!;
  if (isIPv4(zoneless) || isIP(zoneless) !== 6) return zoneless;
  return `${expandIPv6(zoneless).slice(0, 4).join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, as lower-case hex without leading zeros. */
function expandIPv6(address: string): string[] {
  let text = address.toLowerCase();
  // A trailing dotted IPv4 part counts as two groups.
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill("0");
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16));
}

/**
 * The bucket id of an address: a hash, so that the shared store holds no
 * address (they are personal data). It is a pseudonym, not anonymity (IPv4
 * can be enumerated), and lives only until the budget is full again.
 */
export function addressBucketId(address: string): string {
  return createHash("sha256").update(addressUnit(address)).digest("base64url").slice(0, 22);
}

/**
 * An address as the audit trail keeps it: IPv4-mapped IPv6 (how a dual-stack
 * socket reports IPv4 peers) as plain IPv4, an IPv6 zone dropped, and ""
 * for anything that is no IP address (no peer).
 */
export function auditIp(address: string): string {
  const zoneless = address.replace(/%.*$/, "");
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(zoneless);
  if (mapped) return mapped[1]!;
  return isIP(zoneless) ? zoneless : "";
}
