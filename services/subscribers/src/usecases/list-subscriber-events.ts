import { decodeCursor, encodeCursor, pageLimit } from "@emailsvc/runtime";
import type { TenantFilter } from "@emailsvc/storage";
import type { AuditDoc } from "../storage/documents.js";
import { loadSubscriber, type Scope } from "./deps.js";
import type { Page } from "./list-subscribers.js";

/** A subscriber's audit trail, oldest first. */
export async function listSubscriberEvents(
  scope: Scope,
  input: { subscriberId: string; limit: number; cursor: string },
): Promise<Page<AuditDoc>> {
  const limit = pageLimit(input.limit);
  await loadSubscriber(scope, input.subscriberId);
  const filterKey = `subscriber=${input.subscriberId}`;
  const filter: TenantFilter<AuditDoc> = { subscriber_id: input.subscriberId };
  if (input.cursor) filter._id = { $gt: decodeCursor(input.cursor, "evt", filterKey) };
  const docs = await scope.audit.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
  const items = docs.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: docs.length > limit && last ? encodeCursor(last._id, filterKey) : "" };
}
