import type { TenantFilter } from "@emailsvc/storage";
import type { EmailDoc } from "../storage/documents.js";
import { pageById } from "@emailsvc/ids";
import type { EmailStatus, EmailView } from "../domain/email.js";
import { emailView, type Scope } from "./deps.js";

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** What a list may be narrowed to: one status, one campaign, one subscriber, or several of them. */
export interface EmailListFilter {
  status?: EmailStatus;
  campaignId?: string;
  subscriberId?: string;
}

/**
 * The tenant's emails, newest first, `limit` at a time; one extra row tells
 * whether a next page exists. A cursor holds its filter, so a cursor of one
 * filter is refused with another (it would skip or repeat emails).
 */
export async function listEmails(scope: Scope, input: { limit: number; cursor: string } & EmailListFilter): Promise<Page<EmailView>> {
  const filter: Partial<Pick<EmailDoc, "status" | "campaign_id" | "subscriber_id">> = {};
  if (input.status) filter.status = input.status;
  if (input.campaignId) filter.campaign_id = input.campaignId;
  // The erasure's index (tenant, subscriber_id, _id) serves it, newest first.
  if (input.subscriberId) filter.subscriber_id = input.subscriberId;
  const filterKey = [
    "newest",
    input.status ? `status=${input.status}` : "",
    input.campaignId ? `campaign=${input.campaignId}` : "",
    input.subscriberId ? `subscriber=${input.subscriberId}` : "",
  ]
    .filter(Boolean)
    .join("|");
  const page = await pageById(input, { idPrefix: "eml", filterKey, newestFirst: true }, ({ range, options }) =>
    scope.emails.find({ ...filter, ...range } as TenantFilter<EmailDoc>, options),
  );
  return { items: page.docs.map(emailView), nextCursor: page.nextCursor };
}
