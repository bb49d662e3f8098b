import type { TenantFilter } from "@emailsvc/storage";
import type { SubscriberDoc } from "../storage/documents.js";
import { pageById } from "@emailsvc/ids";
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
  const filter: TenantFilter<SubscriberDoc> = { deleted: false };
  if (input.status) filter.status = input.status;
  const page = await pageById(input, { idPrefix: "sub", filterKey: input.status ? `status=${input.status}` : "" }, ({ range, options }) =>
    scope.subscribers.find({ ...filter, ...range }, options),
  );
  return { items: await subscriberViews(scope, page.docs), nextCursor: page.nextCursor };
}
