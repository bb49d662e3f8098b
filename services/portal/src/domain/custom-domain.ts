import { isIP } from "node:net";
import { domainToASCII } from "node:url";
import { parse } from "tldts";

// Which hosts an account may claim as its portal's custom domain. Pure: the
// platform's own hosts come in as an argument.
//
// A custom domain is a host one label (at least) below a registrable domain,
// because it must carry a CNAME, and a CNAME cannot sit at a zone's apex
// (RFC 1034 3.6.2: no other data beside it, and the apex has SOA and NS).
// "Registrable" follows the Public Suffix List (tldts, ICANN and private
// sections): `news.example.co.uk` is fine, `example.co.uk` is the apex,
// `myshop.github.io` is an apex too (github.io is a public suffix).

export const MAX_DOMAIN_LENGTH = 253;

export type DomainProblem =
  | { ok: true; domain: string }
  | { ok: false; reason: string };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The domain as stored (lower case, no trailing dot, IDN as punycode), or why
 * it is refused. `platformHosts`: the hosts of PUBLIC_API_URL,
 * PREFERENCES_URL and CUSTOM_DOMAIN_TARGET; they and their subdomains are ours.
 */
export function checkCustomDomain(input: string, platformHosts: readonly string[]): DomainProblem {
  const raw = input.trim();
  if (raw === "") return { ok: false, reason: "is required: a host name such as preferences.example.com" };
  if (raw.length > MAX_DOMAIN_LENGTH + 1 + 64) return { ok: false, reason: `must be at most ${MAX_DOMAIN_LENGTH} characters` };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) || /[/?#@\s]/.test(raw)) {
    return { ok: false, reason: "must be a host name only, without scheme, path, port or spaces (e.g. preferences.example.com)" };
  }
  if (raw.includes("*")) return { ok: false, reason: "wildcards are not accepted: give the one host the page is served from" };
  const unbracketed = raw.replace(/^\[(.*)\]$/, "$1");
  if (isIP(unbracketed) !== 0) return { ok: false, reason: "must be a host name, not an IP address" };
  if (raw.includes(":")) return { ok: false, reason: "must be a host name only, without a port" };
  const withoutDot = raw.endsWith(".") ? raw.slice(0, -1) : raw;
  // WHATWG/UTS 46 processing: lower case, Unicode labels to punycode (Bücher -> xn--bcher-kva); "" when invalid.
  const ascii = domainToASCII(withoutDot);
  if (ascii === "") return { ok: false, reason: "is not a valid host name" };
  if (ascii.length > MAX_DOMAIN_LENGTH) return { ok: false, reason: `must be at most ${MAX_DOMAIN_LENGTH} characters (in its ASCII form)` };
  if (isIP(ascii) !== 0) return { ok: false, reason: "must be a host name, not an IP address" };
  const labels = ascii.split(".");
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) {
    return { ok: false, reason: "is not a valid host name: dot-separated labels of letters, digits and inner hyphens, 63 characters at most each" };
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return { ok: false, reason: "is not a valid host name (the last label is numeric)" };
  for (const own of platformHosts) {
    if (ascii === own || ascii.endsWith(`.${own}`)) return { ok: false, reason: `belongs to this platform (${own}); use a host of your own domain` };
  }
  const parsed = parse(ascii, { allowPrivateDomains: true });
  if (!parsed.isIcann && !parsed.isPrivate) {
    return { ok: false, reason: "is not under a public top-level domain (a certificate cannot be issued for it)" };
  }
  if (!parsed.domain) return { ok: false, reason: "is a public suffix, not a domain of yours" };
  if (parsed.domain === ascii) {
    return {
      ok: false,
      reason: `is an apex domain; use a subdomain such as preferences.${ascii} (a CNAME cannot be set on the apex)`,
    };
  }
  return { ok: true, domain: ascii };
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
