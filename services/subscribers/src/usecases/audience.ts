import { invalid } from "@emailsvc/errors";
import { isId, pageLimit } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import {
  AUDIENCE_PAGE,
  unknownTags,
  validateAfter,
  validateAudienceFilter,
  type AudienceFilter,
  type AudienceFilterInput,
  type TagRef,
} from "../domain/audience.js";
import { MARKETING_STATUS, mailabilityOf, withSuppression, type Mailability } from "../domain/mailability.js";
import { reasonOf } from "../domain/suppression.js";
import type { SubscriberDoc } from "../storage/documents.js";
import { suppressionsOf, type Deps, type Scope } from "./deps.js";

// The audience of a filter (AudienceService): who a campaign reaches. Count
// and list build their query in one place, so they always agree.

/** Active, not deleted subscribers matching the filter, now. */
export async function countAudience(scope: Scope, input: AudienceFilterInput | undefined): Promise<number> {
  const filter = validateAudienceFilter(input);
  const query = await audienceQuery(scope, filter);
  const count = (f: TenantFilter<SubscriberDoc>) => scope.subscribers.count(f);
  if (filter.include.length > 0 && filter.match === "any" && filter.exclude.length === 0 && filter.metadata.length === 0) return countLiveHolders(count, query);
  return count(query);
}

/**
 * An audience by tags (`match` any, nothing else) counted as the active
 * subscribers holding one of the tags less the deleted ones among them: the
 * first is what the audience_by_tag index holds, so a store that counts from
 * an index (the embedded one) reads no subscriber for it, and the second
 * reads only tombstones (list_by_status). Counted as one query, every
 * candidate was read to check `deleted`: a quarter of a second or more for
 * 100,000 subscribers at each look at a campaign's recipient count
 * (bench:store-reads, which counts with this too). A store that scans a
 * collection per query (FerretDB v1) makes it two scans rather than one.
 */
export async function countLiveHolders<F extends { deleted?: unknown }>(count: (filter: Omit<F, "deleted"> & { deleted?: true }) => Promise<number>, query: F): Promise<number> {
  const { deleted: _deleted, ...holders } = query;
  const [all, tombstones] = await Promise.all([count(holders), count({ ...holders, deleted: true })]);
  return Math.max(0, all - tombstones);
}

export interface AudiencePage {
  subscriberIds: string[];
  /** The `after` of the next page; "" when this one is the last. */
  nextAfter: string;
}

/**
 * One page of the audience's subscriber ids, ascending, after `after`. One
 * extra row tells whether a next page exists, so the last page says so and a
 * caller never needs an empty round trip.
 */
export async function listAudience(
  scope: Scope,
  input: { filter: AudienceFilterInput | undefined; after: string; limit: number },
): Promise<AudiencePage> {
  const filter = validateAudienceFilter(input.filter);
  const after = validateAfter(input.after);
  const limit = pageLimit(input.limit, AUDIENCE_PAGE);
  const query = await audienceQuery(scope, filter);
  if (after) query._id = { $gt: after };
  const docs = await scope.subscribers.find(query, { sort: { _id: 1 }, limit: limit + 1 });
  const page = docs.slice(0, limit).map((d) => d._id);
  return { subscriberIds: page, nextAfter: docs.length > limit ? page[page.length - 1]! : "" };
}

/** Most ids one GetRecipients call takes: a batch of delivery's campaign intake. */
export const RECIPIENTS_MAX = 1000;

export interface RecipientView {
  subscriberId: string;
  email: string;
  status: SubscriberDoc["status"];
  metadata: Record<string, unknown>;
  /** The language of their mail when its template declares none; "" when not set. */
  locale: string;
  /** Whether they may be mailed, per category (domain/mailability.ts). */
  mailability: Mailability;
}

/** A live subscriber as a recipient. */
export function recipientView(doc: SubscriberDoc): RecipientView {
  return { subscriberId: doc._id, email: doc.email, status: doc.status, metadata: doc.metadata, locale: doc.locale ?? "", mailability: mailabilityOf(doc) };
}

/**
 * Where and how to mail each of up to RECIPIENTS_MAX subscribers, and whether
 * they may be (delivery's campaign intake): one query by ids. Ids of no (or a
 * deleted) subscriber of the tenant are left out; the order is the order asked.
 */
export async function getRecipients(deps: Deps, scope: Scope, ids: readonly string[]): Promise<RecipientView[]> {
  if (ids.length === 0 || ids.length > RECIPIENTS_MAX) {
    throw invalid(`subscriber_ids must hold 1 to ${RECIPIENTS_MAX} ids`, [{ field: "subscriber_ids", description: `must hold 1 to ${RECIPIENTS_MAX} ids` }]);
  }
  const bad = ids.findIndex((id) => !isId("sub", id));
  if (bad >= 0) throw invalid("subscriber_ids holds a malformed id", [{ field: `subscriber_ids[${bad}]`, description: "is not a subscriber id" }]);
  const docs = await scope.subscribers.find({ _id: { $in: [...new Set(ids)] }, deleted: false });
  const byId = new Map(docs.map((d) => [d._id, d]));
  // The suppression list's entries of their addresses (an address suppressed by hand, say, of an active subscriber).
  const listed = await suppressionsOf(deps, scope, docs.map((d) => d.email_key));
  return ids.flatMap((id) => {
    const doc = byId.get(id);
    if (!doc) return [];
    const view = recipientView(doc);
    const entry = listed.get(doc.email_key);
    if (entry) view.mailability = withSuppression(view.mailability, reasonOf(entry));
    return [view];
  });
}

/**
 * The store filter of an audience: tag names resolved to this tenant's tag ids
 * (one query for both lists; any unknown name is INVALID_ARGUMENT `unknown_tags`),
 * then conditions on `tag_ids`, `status`, `deleted` and `metadata.<key>`.
 */
async function audienceQuery(scope: Scope, filter: AudienceFilter): Promise<TenantFilter<SubscriberDoc>> {
  const refs = [...filter.include, ...filter.exclude];
  const idOf = new Map<string, string>();
  if (refs.length > 0) {
    const keys = [...new Set(refs.map((r) => r.key))];
    for (const tag of await scope.tags.find({ name_key: { $in: keys } })) idOf.set(tag.name_key, tag._id);
  }
  const unknown = refs.filter((r) => !idOf.has(r.key));
  if (unknown.length > 0) throw unknownTags(unknown);
  const ids = (list: TagRef[]) => [...new Set(list.map((r) => idOf.get(r.key)!))];

  // Only who may get marketing mail (campaign mail is): by status, since a
  // subscriber is never suppressed (that is an address that is none).
  const query: TenantFilter<SubscriberDoc> = { status: MARKETING_STATUS, deleted: false };
  const tagCondition: { $in?: string[]; $all?: string[]; $nin?: string[] } = {};
  if (filter.include.length > 0) tagCondition[filter.match === "all" ? "$all" : "$in"] = ids(filter.include);
  if (filter.exclude.length > 0) tagCondition.$nin = ids(filter.exclude);
  if (filter.include.length > 0 || filter.exclude.length > 0) query.tag_ids = tagCondition;
  for (const c of filter.metadata) {
    // Keys follow the metadata key rule (no "." or "$"), checked in validateAudienceFilter.
    query[`metadata.${c.key}`] =
      c.kind === "equals" ? { $eq: c.value } : c.kind === "in" ? { $in: c.values } : { $exists: c.exists };
  }
  return query;
}
