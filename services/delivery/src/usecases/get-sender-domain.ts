import type { SenderDomainDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { loadSenderDomain } from "./sender-domains.js";

/** One of the tenant's sending domains (404 `sender_domain_not_found` for any other id). */
export function getSenderDomain(scope: Scope, id: string): Promise<SenderDomainDoc> {
  return loadSenderDomain(scope.senderDomains, id);
}
