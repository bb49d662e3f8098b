import { AppError } from "@emailsvc/errors";
import type { SenderDomainDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { afterCheck, checkRecords, DnsUnavailableError, loadSenderDomain, type SenderDomainDeps, type SigningKeyCache } from "./sender-domains.js";

/**
 * Looks the domain's records up now and answers each with what was found
 * (`verified`, `missing`, `mismatch`). The required ones (DKIM RSA, SPF)
 * decide the status; a failed domain starts its re-checks over. A resolver
 * that does not answer is a 503 `dns_lookup_failed` and changes nothing.
 */
export async function verifySenderDomain(deps: SenderDomainDeps, scope: Scope, keys: SigningKeyCache, id: string): Promise<SenderDomainDoc> {
  const doc = await loadSenderDomain(scope.senderDomains, id);
  let records;
  try {
    records = await checkRecords(deps, doc);
  } catch (err) {
    if (!(err instanceof DnsUnavailableError)) throw err;
    deps.logger.warn({ sender_domain_id: doc._id, code: err.code }, "sending domain check: a DNS lookup got no answer");
    throw new AppError("unavailable", "dns_lookup_failed", "the DNS did not answer the lookups; try again");
  }
  const outcome = afterCheck(doc, records, deps.now(), deps.recheck, true);
  const updated = await scope.senderDomains.updateOne({ _id: doc._id }, { $set: outcome });
  if (!updated) throw new AppError("not_found", "sender_domain_not_found", "no sending domain with this id");
  if (updated.status !== doc.status) keys.forget(scope.tenant, doc.name);
  return updated;
}
