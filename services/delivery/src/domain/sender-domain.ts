import { generateKeyPair, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { checkHostName } from "@emailsvc/address";
import { AppError } from "@emailsvc/errors";

// Sending domains: the name rule, the records a domain publishes, what a DNS
// answer means for each, and when the background re-check looks again. Pure
// but for key generation (node:crypto).

export type SenderDomainStatus = "pending" | "verified" | "failed";
export type RecordPurpose = "dkim" | "dkim_ed25519" | "spf" | "dmarc" | "return_path";
export type RecordState = "not_checked" | "verified" | "missing" | "mismatch";

/** One record to publish, and what the last check found. */
export interface DnsRecordView {
  purpose: RecordPurpose;
  type: "TXT" | "CNAME";
  name: string;
  value: string;
  required: boolean;
  state: RecordState;
  found: string[];
}

/** The platform's side of the records: what SPF includes and where return paths point. */
export interface SenderDnsSettings {
  /** SPF_INCLUDE: the host whose SPF record lists the platform's sending IPs. */
  spfInclude: string;
  /** RETURN_PATH_HOST: where `<RETURN_PATH_LABEL>.<domain>` points (the bounce receiver's host). */
  returnPathHost: string;
}

/** The label of the return-path host below a sending domain (`bounces.example.com`). */
export const RETURN_PATH_LABEL = "bounces";

/** The platform's own hosts are never a customer's sending domain. */
export function checkSenderDomainName(input: unknown, platformHosts: readonly string[]): string {
  const checked = checkHostName(typeof input === "string" ? input : "", platformHosts, "example.com or mail.example.com");
  if (!checked.ok) {
    throw new AppError("invalid", "invalid_sender_domain", `The domain ${checked.reason}.`, {
      fieldViolations: [{ field: "name", description: checked.reason }],
    });
  }
  return checked.name;
}

/** A DKIM key pair as generated: the private key as PKCS#8 PEM (to be sealed), the public key as the DKIM record's `p=`. */
export interface GeneratedKey {
  selector: string;
  privateKeyPem: string;
  publicKey: string;
}

const generate = promisify(generateKeyPair) as unknown as (
  type: "rsa" | "ed25519",
  options: { modulusLength?: number },
) => Promise<{ publicKey: import("node:crypto").KeyObject; privateKey: import("node:crypto").KeyObject }>;

/**
 * RSA 2048 and Ed25519 (RFC 8463) key pairs with selectors of their own. A
 * random part in the selectors lets two tenants (or both modes of one
 * account) publish keys for one domain side by side.
 */
export async function generateDkimKeys(): Promise<{ rsa: GeneratedKey; ed25519: GeneratedKey }> {
  const tag = randomBytes(5).toString("hex");
  // Off the event loop (an RSA 2048 pair takes tens to hundreds of milliseconds): sends go on meanwhile.
  const [rsa, ed] = await Promise.all([generate("rsa", { modulusLength: 2048 }), generate("ed25519", {})]);
  const edSpki = ed.publicKey.export({ type: "spki", format: "der" });
  return {
    rsa: {
      selector: `es${tag}r`,
      privateKeyPem: rsa.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      // RFC 6376 3.6.1: p= is the base64 of the SubjectPublicKeyInfo.
      publicKey: rsa.publicKey.export({ type: "spki", format: "der" }).toString("base64"),
    },
    ed25519: {
      selector: `es${tag}e`,
      privateKeyPem: ed.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      // RFC 8463 4.2: p= is the bare 32-byte public key, not its SubjectPublicKeyInfo.
      publicKey: edSpki.subarray(edSpki.length - 32).toString("base64"),
    },
  };
}

export function dkimRecordName(selector: string, domain: string): string {
  return `${selector}._domainkey.${domain}`;
}

/** The records to publish for a domain, none checked yet. DKIM (RSA) and SPF are required; the others are reported. */
export function recordsFor(
  domain: string,
  keys: { rsa: { selector: string; publicKey: string }; ed25519: { selector: string; publicKey: string } },
  settings: SenderDnsSettings,
): DnsRecordView[] {
  const record = (purpose: RecordPurpose, type: "TXT" | "CNAME", name: string, value: string, required: boolean): DnsRecordView => ({
    purpose,
    type,
    name,
    value,
    required,
    state: "not_checked",
    found: [],
  });
  return [
    record("dkim", "TXT", dkimRecordName(keys.rsa.selector, domain), `v=DKIM1; k=rsa; p=${keys.rsa.publicKey}`, true),
    record("dkim_ed25519", "TXT", dkimRecordName(keys.ed25519.selector, domain), `v=DKIM1; k=ed25519; p=${keys.ed25519.publicKey}`, false),
    record("spf", "TXT", domain, `v=spf1 include:${settings.spfInclude} ~all`, true),
    record("dmarc", "TXT", `_dmarc.${domain}`, "v=DMARC1; p=none", false),
    record("return_path", "CNAME", `${RETURN_PATH_LABEL}.${domain}`, settings.returnPathHost, false),
  ];
}

/** What a lookup answered for one name: its TXT strings (each record's character-strings joined) or CNAME targets; `[]` for none. */
export type LookupAnswer = string[];

/** DKIM tag list as a map (`v=DKIM1; k=rsa; p=…`), whitespace inside values removed (RFC 6376 3.2 folds it). */
function tags(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const part of text.split(";")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    map.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).replace(/\s+/g, ""));
  }
  return map;
}

/** The state of one record given what its name holds now. */
export function checkRecord(record: Pick<DnsRecordView, "purpose" | "value">, answer: LookupAnswer): { state: RecordState; found: string[] } {
  switch (record.purpose) {
    case "dkim":
    case "dkim_ed25519": {
      // Only DKIM key records count: a selector's name holds nothing else by design.
      const found = answer.filter((text) => /^\s*v\s*=\s*DKIM1\b/i.test(text) || tags(text).has("p"));
      const wanted = tags(record.value);
      const ok = found.some((text) => {
        const have = tags(text);
        return have.get("p") === wanted.get("p") && (have.get("k") ?? "rsa").toLowerCase() === wanted.get("k");
      });
      return { state: ok ? "verified" : found.length > 0 ? "mismatch" : "missing", found };
    }
    case "spf": {
      // One SPF record per name (RFC 7208 4.5); ours needs the platform's include in it, whatever else it lists.
      const found = answer.filter((text) => /^\s*v=spf1(\s|$)/i.test(text));
      const include = /include:(\S+)/.exec(record.value)![1]!.toLowerCase();
      const ok = found.length === 1 && found[0]!.toLowerCase().split(/\s+/).some((term) => term.replace(/^[+]/, "") === `include:${include}`);
      return { state: ok ? "verified" : found.length > 0 ? "mismatch" : "missing", found };
    }
    case "dmarc": {
      // Any DMARC policy will do: the suggestion is the mildest one.
      const found = answer.filter((text) => /^\s*v\s*=\s*DMARC1\b/i.test(text));
      return { state: found.length > 0 ? "verified" : "missing", found };
    }
    case "return_path": {
      const found = answer.map((target) => target.toLowerCase().replace(/\.$/, ""));
      return { state: found.includes(record.value.toLowerCase()) ? "verified" : found.length > 0 ? "mismatch" : "missing", found };
    }
  }
}

/** Whether the required records are all verified. */
export function requiredVerified(records: readonly DnsRecordView[]): boolean {
  return records.every((record) => !record.required || record.state === "verified");
}

/** What is still wrong with the required records, in words ("" when nothing). */
export function missingSummary(records: readonly DnsRecordView[]): string {
  return records
    .filter((record) => record.required && record.state !== "verified")
    .map((record) => `${record.purpose === "dkim" ? "DKIM" : "SPF"} record at ${record.name} is ${record.state === "mismatch" ? "not the one to publish" : "missing"}`)
    .join("; ");
}

/** The background re-check's schedule (first after a minute, doubling to 6 h; given up 72 h after the domain started pending). */
export interface RecheckPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
  giveUpAfterMs: number;
}

export const DEFAULT_RECHECK: RecheckPolicy = { firstDelayMs: 60_000, maxDelayMs: 6 * 3_600_000, giveUpAfterMs: 72 * 3_600_000 };

/** When to look again after `checks` checks that found the domain not verified; null: give up (the domain fails). */
export function nextCheckAt(policy: RecheckPolicy, state: { checks: number; pendingSince: number; now: number }): number | null {
  if (state.now - state.pendingSince >= policy.giveUpAfterMs) return null;
  const delay = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(state.checks, 30));
  return Math.min(state.now + delay, state.pendingSince + policy.giveUpAfterMs);
}
