import type { TenantFilter } from "@emailsvc/storage";
import type { SubscriberDoc } from "../storage/documents.js";
import { decodeCursor, encodeCursor, pageLimit } from "@emailsvc/runtime";
import type { Status, SubscriberView } from "../domain/subscriber.js";
import { subscriberViews, type Scope } from "./deps.js";

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** Subscribers in creation order, `limit` at a time; one extra row tells whether a next page exists. */
export async function listSubscribers(
  scope: Scope,
  input: { limit: number; status: Status | undefined; cursor: string },
): Promise<Page<SubscriberView>> {
  const limit = pageLimit(input.limit);
  const filterKey = input.status ? `status=${input.status}` : "";
  const filter: TenantFilter<SubscriberDoc> = { deleted: false };
  if (input.status) filter.status = input.status;
  if (input.cursor) filter._id = { $gt: decodeCursor(input.cursor, "sub", filterKey) };
  const docs = await scope.subscribers.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
  const page = docs.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: await subscriberViews(scope, page),
    nextCursor: docs.length > limit && last ? encodeCursor(last._id, filterKey) : "",
  };
}
