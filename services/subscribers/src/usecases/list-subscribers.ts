import { createHash } from "node:crypto";
import { invalid } from "@emailsvc/errors";
import type { TenantFilter } from "@emailsvc/storage";
import type { SubscriberDoc } from "../storage/documents.js";
import { pageById } from "@emailsvc/ids";
import { emailKey, type Status, type SubscriberView } from "../domain/subscriber.js";
import { tagKey } from "../domain/tag.js";
import { subscriberViews, type Scope } from "./deps.js";

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** The longest address prefix a search takes (an address's own limit). */
const EMAIL_PREFIX_MAX = 254;

/**
 * Subscribers in creation order, `limit` at a time; one extra row tells
 * whether a next page exists. Filters: a status, an address prefix (ignoring
 * case: a range on the lower-cased address, which both stores answer from an
 * index, where a pattern could not), a tag by name.
 */
export async function listSubscribers(
  scope: Scope,
  input: { limit: number; status: Status | undefined; cursor: string; emailPrefix?: string; tag?: string },
): Promise<Page<SubscriberView>> {
  const filter: TenantFilter<SubscriberDoc> = { deleted: false };
  const keys: string[] = [];
  if (input.status) {
    filter.status = input.status;
    keys.push(`status=${input.status}`);
  }
  const raw = input.emailPrefix ?? "";
  // Checked as given (lower-casing may lengthen a few characters), as the API's schema checks it.
  if (raw.length > EMAIL_PREFIX_MAX || /[\u0000-\u001f\u007f]/.test(raw)) {
    throw invalid("email is not a valid address prefix", [{ field: "email", description: `is 1-${EMAIL_PREFIX_MAX} characters without control characters` }]);
  }
  const prefix = emailKey(raw);
  if (prefix) {
    // Every key starting with the prefix sorts between it and the prefix followed by the highest code point.
    filter.email_key = { $gte: prefix, $lt: `${prefix}\u{10ffff}` };
    // The cursor names the prefix by a digest: short whatever the prefix, and no part of an address in a URL.
    keys.push(`email=${createHash("sha256").update(prefix).digest("base64url").slice(0, 16)}`);
  }
  if (input.tag) {
    const tag = await scope.tags.findOne({ name_key: tagKey(input.tag) });
    // No tag of that name: nobody holds it.
    if (!tag) return { items: [], nextCursor: "" };
    filter.tag_ids = tag._id;
    keys.push(`tag=${tag._id}`);
  }
  const page = await pageById(input, { idPrefix: "sub", filterKey: keys.join("&") }, ({ range, options }) =>
    scope.subscribers.find({ ...filter, ...range }, options),
  );
  return { items: await subscriberViews(scope, page.docs), nextCursor: page.nextCursor };
}
