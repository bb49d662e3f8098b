import { Resolver } from "node:dns/promises";

// The DNS lookups of records a customer publishes (a custom portal domain's
// CNAME, a sending domain's DKIM, SPF and DMARC TXT and return-path CNAME),
// through node:dns with the resolvers an operator names, or the system's.
// Services take these as functions so that tests can answer them.

export interface DnsLookups {
  /** CNAME targets of a name; throws node:dns's error (ENOTFOUND, ENODATA, ETIMEOUT, …). */
  resolveCname(name: string): Promise<string[]>;
  /** TXT records of a name, each as its character-strings; throws as resolveCname. */
  resolveTxt(name: string): Promise<string[][]>;
}

/** `servers`: `ip` or `ip:port` entries (a setting such as CUSTOM_DOMAIN_DNS_SERVERS); none: the system's resolvers. */
export function systemDnsLookups(servers?: readonly string[]): DnsLookups {
  const resolver = new Resolver({ timeout: 5000, tries: 2 });
  if (servers && servers.length > 0) resolver.setServers([...servers]);
  return {
    resolveCname: (name) => resolver.resolveCname(name),
    resolveTxt: (name) => resolver.resolveTxt(name),
  };
}

/** Whether a lookup's error means "no such record" (as opposed to a resolver that did not answer). */
export function isNoRecord(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOTFOUND" || code === "ENODATA" || code === "NOTFOUND" || code === "NODATA";
}
