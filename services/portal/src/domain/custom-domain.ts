import { checkHostName, MAX_HOST_NAME_LENGTH } from "@emailsvc/address";

// Which hosts an account may claim as its portal's custom domain. Pure: the
// platform's own hosts come in as an argument.
//
// A custom domain is a host one label (at least) below a registrable domain,
// because it must carry a CNAME, and a CNAME cannot sit at a zone's apex
// (RFC 1034 3.6.2: no other data beside it, and the apex has SOA and NS).
// "Registrable" follows the Public Suffix List (tldts, ICANN and private
// sections): `news.example.co.uk` is fine, `example.co.uk` is the apex,
// `myshop.github.io` is an apex too (github.io is a public suffix).

export const MAX_DOMAIN_LENGTH = MAX_HOST_NAME_LENGTH;

export type DomainProblem =
  | { ok: true; domain: string }
  | { ok: false; reason: string };

/**
 * The domain as stored (lower case, no trailing dot, IDN as punycode), or why
 * it is refused. `platformHosts`: the hosts of PUBLIC_API_URL,
 * PREFERENCES_URL and CUSTOM_DOMAIN_TARGET; they and their subdomains are ours.
 */
export function checkCustomDomain(input: string, platformHosts: readonly string[]): DomainProblem {
  const checked = checkHostName(input, platformHosts, "preferences.example.com");
  if (!checked.ok) {
    // A host that is no public name cannot get a certificate: say why it matters here.
    return checked.reason === "is not under a public top-level domain" ? { ok: false, reason: `${checked.reason} (a certificate cannot be issued for it)` } : checked;
  }
  if (checked.registrable === checked.name) {
    return {
      ok: false,
      reason: `is an apex domain; use a subdomain such as preferences.${checked.name} (a CNAME cannot be set on the apex)`,
    };
  }
  return { ok: true, domain: checked.name };
}

/** The host of a URL setting, lower case, without port; undefined when unset or not a URL. */
export function hostOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const host = new URL(url.includes("://") ? url : `https://${url}`).hostname.toLowerCase();
    return host.replace(/^\[|\]$/g, "").replace(/\.$/, "") || undefined;
  } catch {
    return undefined;
  }
}
