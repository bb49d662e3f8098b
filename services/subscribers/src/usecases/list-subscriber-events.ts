import { pageById, pageLimit } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import type { AuditDoc } from "../storage/documents.js";
import { loadSubscriber, type Scope } from "./deps.js";
import type { Page } from "./list-subscribers.js";

/** A subscriber's audit trail, oldest first. */
export async function listSubscriberEvents(
  scope: Scope,
  input: { subscriberId: string; limit: number; cursor: string },
): Promise<Page<AuditDoc>> {
  pageLimit(input.limit); // a bad limit is a 400 before the subscriber's 404
  await loadSubscriber(scope, input.subscriberId);
  const filter: TenantFilter<AuditDoc> = { subscriber_id: input.subscriberId };
  const page = await pageById(input, { idPrefix: "evt", filterKey: `subscriber=${input.subscriberId}` }, ({ range, options }) =>
    scope.audit.find({ ...filter, ...range }, options),
  );
  return { items: page.docs, nextCursor: page.nextCursor };
}
