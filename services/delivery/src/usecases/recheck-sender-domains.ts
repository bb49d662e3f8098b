import type { CrossTenantCollection } from "@emailsvc/storage";
import type { SenderDomainDoc } from "../storage/documents.js";
import { afterCheck, checkRecords, DnsUnavailableError, type SenderDomainDeps, type SigningKeyCache } from "./sender-domains.js";

/** Domains one pass checks at most (each is a handful of lookups of up to 5 s). */
const PER_PASS = 20;

/** How long a replica holds a domain it is checking: another looks again after this if it died mid-check. */
const CLAIM_MS = 5 * 60_000;

/**
 * The background re-check of pending and verified domains (a pass of
 * delivery's outbox sweep, so it runs on its timer on both stores; verified
 * ones daily, see afterCheck): each due domain is claimed
 * by a guarded write (its next check moved past the claim), looked up, and
 * written back with its status and next check (a minute, doubling, up to 6 h
 * apart; failed 72 h after it started pending). A resolver that does not
 * answer leaves the domain as it was, for the next step of its backoff.
 * Resolves how many domains it checked.
 */
export async function recheckSenderDomains(deps: SenderDomainDeps, domains: CrossTenantCollection<SenderDomainDoc>, keys: SigningKeyCache): Promise<number> {
  const now = deps.now();
  // Pending domains on their backoff, and verified ones on their daily (or, records missing, hourly) look.
  const due = await domains.find({ status: { $in: ["pending", "verified"] }, next_check_at: { $lte: now } }, { sort: { next_check_at: 1 }, limit: PER_PASS });
  let checked = 0;
  for (const doc of due) {
    const tenantDomains = domains.forTenant(doc.tenant);
    const claimed = await tenantDomains.updateOne(
      { _id: doc._id, status: doc.status, next_check_at: doc.next_check_at },
      { $set: { next_check_at: now + CLAIM_MS } },
    );
    if (!claimed) continue;
    let outcome;
    try {
      outcome = afterCheck(claimed, await checkRecords(deps, claimed), deps.now(), deps.recheck, false);
    } catch (err) {
      if (!(err instanceof DnsUnavailableError)) throw err;
      deps.logger.warn({ sender_domain_id: doc._id, code: err.code }, "sending domain re-check: a DNS lookup got no answer; trying again later");
      const later = afterCheck(claimed, claimed.records, deps.now(), deps.recheck, false);
      await tenantDomains.updateOne({ _id: doc._id, next_check_at: now + CLAIM_MS }, { $set: { next_check_at: later.next_check_at ?? deps.now() + deps.recheck.maxDelayMs, checks: later.checks } });
      continue;
    }
    // Guarded by the claim: a check by hand meanwhile wrote a newer answer.
    const written = await tenantDomains.updateOne({ _id: doc._id, next_check_at: now + CLAIM_MS }, { $set: outcome });
    if (written && written.status !== doc.status) keys.forget(doc.tenant, doc.name);
    checked += 1;
  }
  return checked;
}
