import { BlockList, isIP } from "node:net";

// Where webhooks may never go (SSRF): an integrator's URL must not reach the
// platform's own network. Checked on the address actually connected to,
// after DNS resolution (http/request.ts pins it), and at create for a URL
// that names an address. An operator may allow ranges (tests, a private
// deployment): WEBHOOK_ALLOW_PRIVATE_RANGES, CIDRs.

const FORBIDDEN_V4: Array<[string, number]> = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // CGNAT (RFC 6598)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

const FORBIDDEN_V6: Array<[string, number]> = [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["64:ff9b::", 96], // NAT64: an IPv4 address behind it
  ["fc00::", 7], // unique local (fd00:ec2::254, a cloud's metadata, is one)
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated, still routed by some)
  ["ff00::", 8], // multicast
];

/** The rule for where webhooks may connect. */
export class AddressPolicy {
  private readonly forbidden = new BlockList();
  private readonly allowed = new BlockList();

  /** `allowRanges`: CIDRs the operator allows although they are private (e.g. `127.0.0.0/8`). */
  constructor(readonly allowRanges: readonly string[] = []) {
    for (const [net, prefix] of FORBIDDEN_V4) this.forbidden.addSubnet(net, prefix, "ipv4");
    for (const [net, prefix] of FORBIDDEN_V6) this.forbidden.addSubnet(net, prefix, "ipv6");
    for (const range of allowRanges) {
      const parsed = parseCidr(range);
      if (!parsed) throw new Error(`"${range}" is not a CIDR range (e.g. 127.0.0.0/8 or fd00::/8)`);
      this.allowed.addSubnet(parsed.network, parsed.prefix, parsed.family);
    }
  }

  /**
   * Whether a connection to `address` (an IP) is allowed. IPv4-mapped IPv6
   * addresses (`::ffff:127.0.0.1`) are judged as the IPv4 address they carry.
   */
  allows(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    const type = family === 4 ? "ipv4" : "ipv6";
    if (this.allowed.check(address, type)) return true;
    return !this.forbidden.check(address, type);
  }
}

/** `a.b.c.d/n` or `v6::/n`; undefined when it is not one. */
export function parseCidr(text: string): { network: string; prefix: number; family: "ipv4" | "ipv6" } | undefined {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  if (!match) return undefined;
  const network = match[1]!;
  const prefix = Number(match[2]);
  const family = isIP(network);
  if (family === 4 && prefix <= 32) return { network, prefix, family: "ipv4" };
  if (family === 6 && prefix <= 128) return { network, prefix, family: "ipv6" };
  return undefined;
}

/** The host of a URL as an IP address, when it names one (`[::1]` without its brackets); else undefined. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}
