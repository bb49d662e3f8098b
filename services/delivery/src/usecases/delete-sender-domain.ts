import type { Scope } from "./deps.js";
import { loadSenderDomain, type SigningKeyCache } from "./sender-domains.js";

/**
 * Deletes a sending domain and its keys. Decided: a domain a template's From
 * or queued mail still names is deleted all the same (the domain is the
 * customer's to withdraw, e.g. after a key leaked): from then on live mail
 * From it is refused at send, mail already queued goes out unsigned, and
 * other replicas stop signing with its key within 30 s (their key cache).
 */
export async function deleteSenderDomain(scope: Scope, keys: SigningKeyCache, id: string): Promise<void> {
  const doc = await loadSenderDomain(scope.senderDomains, id);
  await scope.senderDomains.deleteOne({ _id: doc._id });
  keys.forget(scope.tenant, doc.name);
}
