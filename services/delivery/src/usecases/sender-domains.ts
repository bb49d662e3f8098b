import { createPrivateKey, type KeyObject } from "node:crypto";
import { isNoRecord, type DnsLookups } from "@emailsvc/address";
import { ExpiringCache } from "@emailsvc/async";
import { AppError } from "@emailsvc/errors";
import { isId } from "@emailsvc/ids";
import type { TenantCollection } from "@emailsvc/storage";
import type { Logger } from "@emailsvc/telemetry";
import { openSealed, type KeyRing } from "@emailsvc/tokens";
import {
  checkRecord,
  missingSummary,
  nextCheckAt,
  requiredVerified,
  type DnsRecordView,
  type RecheckPolicy,
  type SenderDnsSettings,
  type SenderDomainStatus,
} from "../domain/sender-domain.js";
import type { SenderDomainDoc } from "../storage/documents.js";

// What every sending-domain use case shares: its settings, the DNS lookups,
// the check of a domain's records and what it does to the domain's status,
// and the opened signing keys, cached per domain.

/** The purpose DKIM private keys are sealed for (@emailsvc/tokens, seal). */
export const DKIM_KEY_PURPOSE = "dkim-private-key";

export interface SenderDomainDeps {
  /** SEALING_KEYS: seals the DKIM private keys at rest. */
  sealingKeys: KeyRing;
  /** The DNS as the world sees it (SENDER_DOMAIN_DNS_SERVERS, else the system's resolvers). */
  dns: DnsLookups;
  dnsSettings: SenderDnsSettings;
  /** Hosts of this platform (EMAIL_FROM's domain, PUBLIC_API_URL's): nobody's sending domain. */
  platformHosts: readonly string[];
  recheck: RecheckPolicy;
  logger: Logger;
  now: () => number;
}

export const SENDER_DOMAIN_ID_PREFIX = "sdm";

export async function loadSenderDomain(domains: TenantCollection<SenderDomainDoc>, id: string): Promise<SenderDomainDoc> {
  const doc = isId(SENDER_DOMAIN_ID_PREFIX, id) ? await domains.findOne({ _id: id }) : null;
  if (!doc) throw new AppError("not_found", "sender_domain_not_found", "no sending domain with this id");
  return doc;
}


/** What one record's name holds now, of its kind; [] when nothing. Throws when the resolver does not answer. */
async function lookup(dns: DnsLookups, record: DnsRecordView): Promise<string[]> {
  try {
    if (record.type === "CNAME") return await dns.resolveCname(record.name);
    return (await dns.resolveTxt(record.name)).map((chunks) => chunks.join(""));
  } catch (err) {
    if (isNoRecord(err)) return [];
    throw err;
  }
}

/** Every record of the domain looked up now, with its state. Throws DnsUnavailableError when a lookup gets no answer. */
export async function checkRecords(deps: Pick<SenderDomainDeps, "dns">, doc: SenderDomainDoc): Promise<DnsRecordView[]> {
  try {
    return await Promise.all(doc.records.map(async (record) => ({ ...record, ...checkRecord(record, await lookup(deps.dns, record)) })));
  } catch (err) {
    throw new DnsUnavailableError((err as { code?: string }).code ?? (err instanceof Error ? err.name : "error"));
  }
}

export class DnsUnavailableError extends Error {
  constructor(readonly code: string) {
    super(`a DNS lookup got no answer (${code})`);
    this.name = "DnsUnavailableError";
  }
}

/** The fields a check writes: the records as found, and the status they and the schedule make. */
export type CheckOutcome = {
  status: SenderDomainStatus;
  records: DnsRecordView[];
  failure_reason: string;
  pending_since: number;
  checks: number;
  verified_at: number | null;
  last_checked_at: number;
  next_check_at: number | null;
  failing_since: number | null;
};

/** How often a verified domain's records are looked up again: a record removed later shows, and the domain fails if it stays removed. */
export const VERIFIED_RECHECK_MS = 24 * 3_600_000;
/** How often a verified domain whose records went missing is looked up, during its grace. */
const FAILING_RECHECK_MS = 3_600_000;

/**
 * The domain after a check. Verified once the required records (DKIM RSA,
 * SPF) are seen, and looked up again daily. A verified domain whose records
 * went missing keeps sending, signed, for `giveUpAfterMs` (a DNS change
 * being made, a provider's outage), `failure_reason` saying what is missing
 * since when, looked up hourly; still missing then, it fails (its live mail
 * is refused until verified again), so that a sender never goes on for long
 * with mail that fails DKIM or SPF under DMARC. A check by hand of a failed
 * domain starts the re-checks over; the background re-check of a pending
 * domain gives up `giveUpAfterMs` after it started pending.
 */
export function afterCheck(doc: SenderDomainDoc, records: DnsRecordView[], now: number, policy: RecheckPolicy, byHand: boolean): CheckOutcome {
  if (requiredVerified(records)) {
    return {
      status: "verified",
      records,
      failure_reason: "",
      pending_since: doc.pending_since,
      checks: 0,
      verified_at: doc.verified_at ?? now,
      last_checked_at: now,
      next_check_at: now + VERIFIED_RECHECK_MS,
      failing_since: null,
    };
  }
  if (doc.status === "verified") {
    const since = doc.failing_since ?? now;
    const failsAt = since + policy.giveUpAfterMs;
    const missingNow = missingSummary(records);
    if (now < failsAt) {
      return {
        status: "verified",
        records,
        failure_reason: `since ${new Date(since).toISOString()}: ${missingNow}; mail is still sent and signed until ${new Date(failsAt).toISOString()}, then the domain fails unless the records are back`,
        pending_since: doc.pending_since,
        checks: doc.checks,
        verified_at: doc.verified_at,
        last_checked_at: now,
        next_check_at: Math.min(now + FAILING_RECHECK_MS, failsAt),
        failing_since: since,
      };
    }
    const hours = Math.round(policy.giveUpAfterMs / 3_600_000);
    return {
      status: "failed",
      records,
      failure_reason: `missing for ${hours} h after it was verified: ${missingNow}; publish the records and verify again`,
      pending_since: doc.pending_since,
      checks: doc.checks,
      verified_at: null,
      last_checked_at: now,
      next_check_at: null,
      failing_since: null,
    };
  }
  const restart = doc.status !== "pending" || (byHand && doc.next_check_at === null);
  const pendingSince = restart ? now : doc.pending_since;
  const checks = restart ? 0 : doc.checks + 1;
  const next = nextCheckAt(policy, { checks, pendingSince, now });
  const missing = missingSummary(records);
  if (next === null) {
    const hours = Math.round(policy.giveUpAfterMs / 3_600_000);
    return { status: "failed", records, failure_reason: `not verified after ${hours} h: ${missing}; publish the records and verify again`, pending_since: pendingSince, checks, verified_at: null, last_checked_at: now, next_check_at: null, failing_since: null };
  }
  return { status: "pending", records, failure_reason: missing, pending_since: pendingSince, checks, verified_at: null, last_checked_at: now, next_check_at: next, failing_since: null };
}

/** A sending domain's signing keys, opened. */
export interface DomainSigningKeys {
  domain: string;
  status: SenderDomainStatus;
  /** Its return-path CNAME was found as published: return paths may be `bounces.<domain>`, aligned with the From for DMARC. */
  returnPathVerified: boolean;
  rsa: { selector: string; privateKey: KeyObject };
  ed25519: { selector: string; privateKey: KeyObject };
}

/** How long an opened key (or the answer "no such domain") is kept per tenant and domain: a deletion or a new verification shows within this. */
export const SIGNING_KEYS_TTL_MS = 30_000;

/**
 * The signing keys of a tenant's sending domains, opened once per domain and
 * kept for 30 s (never opened per message). Undefined for a domain that is
 * not the tenant's.
 */
export class SigningKeyCache {
  private readonly cache: ExpiringCache<DomainSigningKeys | undefined>;

  constructor(
    private readonly sealingKeys: KeyRing,
    now: () => number = Date.now,
  ) {
    this.cache = new ExpiringCache(() => SIGNING_KEYS_TTL_MS, { now, maxEntries: 10_000 });
  }

  forDomain(tenant: string, domains: TenantCollection<SenderDomainDoc>, domain: string): Promise<DomainSigningKeys | undefined> {
    return this.cache.get(`${tenant}\n${domain}`, async () => {
      const doc = await domains.findOne({ name: domain });
      if (!doc) return undefined;
      const open = (sealed: string) => createPrivateKey(openSealed(this.sealingKeys, DKIM_KEY_PURPOSE, sealed).toString("utf8"));
      return {
        domain: doc.name,
        status: doc.status,
        returnPathVerified: doc.records.some((record) => record.purpose === "return_path" && record.state === "verified"),
        rsa: { selector: doc.rsa.selector, privateKey: open(doc.rsa.private_key_sealed) },
        ed25519: { selector: doc.ed25519.selector, privateKey: open(doc.ed25519.private_key_sealed) },
      };
    });
  }

  /** This process changed the domain: the next message reads it again. */
  forget(tenant: string, domain: string): void {
    this.cache.forget(`${tenant}\n${domain}`);
  }
}
