// @emailsvc/address: the platform's one rule for an email address, used by
// every service that takes one and published in the OpenAPI document as a
// JSON-Schema pattern built from the same pieces, so the document and the
// servers cannot disagree.
//
// The rule (RFC 5321 section 4.1.2 and 4.5.3.1, RFC 5322 section 3.2.3 and 3.4.1):
// - local-part: a dot-atom of atext (letters, digits and !#$%&'*+-/=?^_`{|}~),
//   so no leading, trailing or double dots; at most 64 octets. Quoted local
//   parts ("john doe"@…) are refused: legal, but almost no mailbox has one and
//   they are where parsers disagree.
// - domain: dot-separated LDH labels (letters, digits, inner hyphens) of 1-63
//   octets, at least two labels, the last a real top-level domain: 2-63
//   letters, or an IDN TLD as an A-label (xn--…). No address literals
//   ([192.0.2.1]) and no numeric TLDs.
// - the whole address: at most 254 octets (RFC 5321's 256-octet path minus
//   the angle brackets).
// - ASCII only. Internationalised addresses are decided this way: an
//   internationalised domain is accepted in its A-label form
//   (user@xn--bcher-kva.example), which every relay can route; UTF-8 in the
//   local part (RFC 6531, SMTPUTF8) and U-labels (bücher.example) are refused
//   with a message that says so, since the provider path does not guarantee
//   SMTPUTF8 end to end and a silently converted address would not be the one
//   the caller gave.
// No character is ever removed or replaced: an address is accepted exactly as
// given (after trimming surrounding spaces) or refused, so what is stored is
// what is sent.

export const ADDRESS_LIMITS = {
  /** Whole address, in octets (= characters: addresses are ASCII). */
  address: 254,
  localPart: 64,
  label: 63,
} as const;

const ATEXT = "A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~";
const ATOM = `[${ATEXT}]+`;
const DOT_ATOM = `${ATOM}(?:\\.${ATOM})*`;
const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const TLD = "(?:[A-Za-z]{2,63}|[Xx][Nn]--[A-Za-z0-9](?:[A-Za-z0-9-]{0,57}[A-Za-z0-9])?)";
const DOMAIN = `(?:${LABEL}\\.)+${TLD}`;

/**
 * The rule as one regular expression (ECMAScript and Python alike), without
 * the whole-length limit, which the schema states as `maxLength`.
 */
export const ADDRESS_PATTERN = `^(?=[^@]{1,${ADDRESS_LIMITS.localPart}}@)${DOT_ATOM}@${DOMAIN}$`;

const ADDRESS = new RegExp(ADDRESS_PATTERN);
const LOCAL_PART = new RegExp(`^${DOT_ATOM}$`);
const LABEL_RE = new RegExp(`^${LABEL}$`);
const TLD_RE = new RegExp(`^${TLD}$`);

/** What the OpenAPI document publishes for an address field. */
export const ADDRESS_JSON_SCHEMA = {
  type: "string",
  format: "email",
  maxLength: ADDRESS_LIMITS.address,
  pattern: ADDRESS_PATTERN,
} as const;

/** Why an address was refused; `describeAddressProblem` says it in words. */
export type AddressProblem =
  | "required"
  | "control_character"
  | "not_ascii"
  | "too_long"
  | "no_at_sign"
  | "quoted_local_part"
  | "local_part_too_long"
  | "local_part_syntax"
  | "domain_syntax"
  | "label_too_long"
  | "top_level_domain";

const DESCRIPTIONS: Record<AddressProblem, string> = {
  required: "is required",
  control_character: "contains a control character",
  not_ascii:
    "contains characters outside ASCII: internationalised local parts are not accepted, and an internationalised domain must be given in its A-label (xn--…) form",
  too_long: `is longer than ${ADDRESS_LIMITS.address} characters`,
  no_at_sign: "needs exactly one @ between the local part and the domain",
  quoted_local_part: "has a quoted local part, which is not accepted",
  local_part_too_long: `has a local part longer than ${ADDRESS_LIMITS.localPart} characters`,
  local_part_syntax:
    "has a local part that is not letters, digits and !#$%&'*+-/=?^_`{|}~ in dot-separated parts (no leading, trailing or double dots)",
  domain_syntax: "has a domain that is not dot-separated labels of letters, digits and inner hyphens",
  label_too_long: `has a domain label longer than ${ADDRESS_LIMITS.label} characters`,
  top_level_domain: "has no valid top-level domain (2-63 letters, or an xn-- A-label)",
};

export function describeAddressProblem(problem: AddressProblem): string {
  return DESCRIPTIONS[problem];
}

// C0, DEL and C1 (U+0080-U+009F, NEL U+0085 among them).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex
const NOT_ASCII = /[^\u0000-\u007f]/;

/**
 * Checks an address exactly as given (no trimming). Returns why it is not
 * valid, or undefined when it is.
 */
export function checkAddress(value: string): AddressProblem | undefined {
  if (value === "") return "required";
  if (CONTROL.test(value)) return "control_character";
  if (NOT_ASCII.test(value)) return "not_ascii";
  if (value.length > ADDRESS_LIMITS.address) return "too_long";
  if (ADDRESS.test(value)) return undefined;
  // Invalid: find the first reason, in the order a reader would check.
  const at = value.lastIndexOf("@");
  if (at <= 0 || at === value.length - 1) return "no_at_sign";
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (local.startsWith('"')) return "quoted_local_part";
  if (local.includes("@")) return "no_at_sign";
  if (local.length > ADDRESS_LIMITS.localPart) return "local_part_too_long";
  if (!LOCAL_PART.test(local)) return "local_part_syntax";
  const labels = domain.split(".");
  if (labels.length < 2) return "top_level_domain";
  for (const label of labels) {
    if (label.length > ADDRESS_LIMITS.label) return "label_too_long";
    if (!LABEL_RE.test(label)) return "domain_syntax";
  }
  if (!TLD_RE.test(labels[labels.length - 1]!)) return "top_level_domain";
  return "domain_syntax";
}

/** True when the address is valid exactly as given. */
export function isValidAddress(value: string): boolean {
  return checkAddress(value) === undefined;
}

/**
 * The form to check and keep: surrounding spaces removed (String#trim).
 * Nothing inside the address is touched.
 */
export function normaliseAddress(raw: string): string {
  return raw.trim();
}

/** The key for uniqueness and lookup: addresses compare case-insensitively. */
export function addressKey(address: string): string {
  return normaliseAddress(address).toLowerCase();
}

export type ParsedAddress = { ok: true; address: string } | { ok: false; problem: AddressProblem; description: string };

/**
 * Normalises and checks raw input. A control character anywhere (also a
 * trailing newline) is refused before trimming: it is an injection attempt,
 * not padding.
 */
export function parseAddress(raw: unknown): ParsedAddress {
  if (typeof raw !== "string" || raw.trim() === "") return refuse("required");
  if (CONTROL.test(raw)) return refuse("control_character");
  const address = normaliseAddress(raw);
  const problem = checkAddress(address);
  return problem ? refuse(problem) : { ok: true, address };
}

function refuse(problem: AddressProblem): ParsedAddress {
  return { ok: false, problem, description: DESCRIPTIONS[problem] };
}

export { checkHostName, MAX_HOST_NAME_LENGTH, type HostNameCheck } from "./host.js";
export { isNoRecord, systemDnsLookups, type DnsLookups } from "./dns.js";
