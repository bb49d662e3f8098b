import { isIP } from "node:net";
import { domainToASCII } from "node:url";
import { parse } from "tldts";

// The one rule for a host name a customer claims as theirs: a custom portal
// domain (the portal) or a sending domain (delivery). Pure: the platform's own
// hosts come in as an argument. What "registrable" means follows the Public
// Suffix List (tldts, ICANN and private sections): `news.example.co.uk` is
// below `example.co.uk`, and `myshop.github.io` is a registrable domain of
// its own (github.io is a public suffix).

export const MAX_HOST_NAME_LENGTH = 253;

export type HostNameCheck =
  /** `name`: lower case, no trailing dot, IDN as punycode; `registrable`: its registrable domain (equal to `name` at the apex). */
  | { ok: true; name: string; registrable: string }
  | { ok: false; reason: string };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A customer's host name as stored, or why it is refused: not a name (scheme,
 * path, port, spaces, wildcards), an IP address, not under a public
 * top-level domain (`localhost`, `example.internal`), a public suffix itself
 * (`co.uk`), or one of `platformHosts` (the platform's own hosts) or below
 * one. `example` is shown in messages (e.g. `preferences.example.com`).
 * Whether the apex is acceptable is the caller's rule (`registrable`).
 */
export function checkHostName(input: string, platformHosts: readonly string[], example: string): HostNameCheck {
  const raw = input.trim();
  if (raw === "") return { ok: false, reason: `is required: a host name such as ${example}` };
  if (raw.length > MAX_HOST_NAME_LENGTH + 1 + 64) return { ok: false, reason: `must be at most ${MAX_HOST_NAME_LENGTH} characters` };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) || /[/?#@\s]/.test(raw)) {
    return { ok: false, reason: `must be a host name only, without scheme, path, port or spaces (e.g. ${example})` };
  }
  if (raw.includes("*")) return { ok: false, reason: "wildcards are not accepted: give the one host name" };
  const unbracketed = raw.replace(/^\[(.*)\]$/, "$1");
  if (isIP(unbracketed) !== 0) return { ok: false, reason: "must be a host name, not an IP address" };
  if (raw.includes(":")) return { ok: false, reason: "must be a host name only, without a port" };
  const withoutDot = raw.endsWith(".") ? raw.slice(0, -1) : raw;
  // WHATWG/UTS 46 processing: lower case, Unicode labels to punycode (Bücher -> xn--bcher-kva); "" when invalid.
  const ascii = domainToASCII(withoutDot);
  if (ascii === "") return { ok: false, reason: "is not a valid host name" };
  if (ascii.length > MAX_HOST_NAME_LENGTH) return { ok: false, reason: `must be at most ${MAX_HOST_NAME_LENGTH} characters (in its ASCII form)` };
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
    return { ok: false, reason: "is not under a public top-level domain" };
  }
  if (!parsed.domain) return { ok: false, reason: "is a public suffix, not a domain of yours" };
  return { ok: true, name: ascii, registrable: parsed.domain };
}
