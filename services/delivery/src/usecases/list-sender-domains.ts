import { pageById } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import type { SenderDomainDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { SENDER_DOMAIN_ID_PREFIX } from "./sender-domains.js";

/** The tenant's sending domains, oldest first, `limit` at a time (cursor pages on _id). */
export async function listSenderDomains(scope: Scope, input: { limit: number; cursor: string }): Promise<{ items: SenderDomainDoc[]; nextCursor: string }> {
  const page = await pageById(input, { idPrefix: SENDER_DOMAIN_ID_PREFIX, filterKey: "all" }, ({ range, options }) =>
    scope.senderDomains.find(range as TenantFilter<SenderDomainDoc>, options),
  );
  return { items: page.docs, nextCursor: page.nextCursor };
}
