import { pageById } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import { reasonOf, SUPPRESSION_REASONS, type SuppressionReason } from "../domain/suppression.js";
import type { SuppressionDoc } from "../storage/documents.js";
import { emailKey, validateEmail } from "../domain/subscriber.js";
import { suppressionOf, type Deps, type Scope } from "./deps.js";
import type { Page } from "./list-subscribers.js";

/** An entry of the suppression list as the service returns it. */
export interface SuppressionView {
  /** The keyed hash of the address: the entry's id, all an erased person's entry keeps. */
  id: string;
  /** "" once its owner was erased (the entry keeps its reason: a bounced address stays refused by its hash). */
  email: string;
  reason: SuppressionReason;
  source: string;
  createdAt: number;
  emailId: string;
}

export function suppressionView(doc: SuppressionDoc): SuppressionView {
  return { id: doc._id, email: doc.email ?? "", reason: reasonOf(doc), source: doc.source ?? "erasure", createdAt: doc.created_at, emailId: doc.email_id ?? "" };
}

/** A keyed hash (base64url of HMAC-SHA256), as entries are keyed. */
const isEntryId = (id: string) => /^[A-Za-z0-9_-]{43}$/.test(id);

/**
 * The tenant's suppression list, `limit` at a time, in entry id order (the
 * keyed hashes: an order of no meaning, but stable for cursors), optionally
 * of one reason. Entries written before reasons existed are erasure markers.
 * With `email`, the search of one address: its entry (found by its keyed
 * hash, as every lookup is), or none; an invalid address is refused.
 */
export async function listSuppressions(
  deps: Deps,
  scope: Scope,
  input: { limit: number; cursor: string; reason: SuppressionReason | undefined; email?: string },
): Promise<Page<SuppressionView>> {
  if (input.email) {
    const entry = await suppressionOf(deps, scope, emailKey(validateEmail(input.email)));
    const shown = entry && (!input.reason || reasonOf(entry) === input.reason) ? [suppressionView(entry)] : [];
    return { items: shown, nextCursor: "" };
  }
  const filter: TenantFilter<SuppressionDoc> = {};
  // Markers written before reasons existed have none: they are erasures.
  if (input.reason === "erased") filter.reason = { $nin: SUPPRESSION_REASONS.filter((r) => r !== "erased") };
  else if (input.reason) filter.reason = input.reason;
  const page = await pageById(input, { idPrefix: isEntryId, filterKey: input.reason ? `reason=${input.reason}` : "" }, ({ range, options }) =>
    scope.suppressions.find({ ...filter, ...range }, options),
  );
  return { items: page.docs.map(suppressionView), nextCursor: page.nextCursor };
}
