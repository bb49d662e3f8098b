import type { CallContext, Logger } from "@emailsvc/runtime";
import { newId, notFound } from "@emailsvc/runtime";
import { outboxWrites, type Outbox } from "@emailsvc/outbox";
import type { Scoped } from "@emailsvc/storage";
import type { SubscriberView } from "../domain/subscriber.js";
import type { TagView } from "../domain/tag.js";
import type { SubscriberDoc, SubscriberEntry, TagDoc } from "../storage/documents.js";
import type { Repositories } from "../storage/repositories.js";

/**
 * What every use case needs besides its tenant's repositories; built once in
 * server.ts. No collection here: a use case reads and writes only through the
 * tenant-scoped repositories of its Scope.
 */
export interface Deps {
  /** Carries out a change's outbox right after its write (the sweep is not theirs). */
  outbox: Pick<Outbox<SubscriberDoc>, "afterWrite">;
  logger: Logger;
  now: () => number;
}

/** One call's tenant-scoped repositories, with the call (tenant, actor) they were opened for. */
export interface Scope extends Repositories {
  call: CallContext;
}

/** The outbox parts of a subscriber's writes, checked against its fields. */
export const subscriberWrites = outboxWrites<Scoped<SubscriberDoc>>();

export function outboxEntry(
  scope: Scope,
  at: number,
  type: string,
  audit: SubscriberEntry["audit"],
  bus: SubscriberEntry["bus"],
): SubscriberEntry {
  return { id: newId("evt"), type, at, actor: scope.call.actor, audit, bus };
}

/** A live (not deleted) subscriber of the tenant, or 404. */
export async function loadSubscriber(scope: Scope, id: string): Promise<SubscriberDoc> {
  const doc = await scope.subscribers.findOne({ _id: id, deleted: false });
  if (!doc) throw notFound("subscriber");
  return doc;
}

export function tagView(doc: TagDoc): TagView {
  return {
    id: doc._id,
    name: doc.name,
    description: doc.description,
    isPublic: doc.is_public,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}

/** Resolves tag ids to names for a page of subscribers with one query. */
export async function subscriberViews(scope: Scope, docs: SubscriberDoc[]): Promise<SubscriberView[]> {
  const ids = [...new Set(docs.flatMap((d) => d.tag_ids))];
  const names = new Map<string, string>();
  if (ids.length > 0) {
    for (const tag of await scope.tags.find({ _id: { $in: ids } })) names.set(tag._id, tag.name);
  }
  return docs.map((d) => ({
    id: d._id,
    email: d.email,
    status: d.status,
    metadata: d.metadata,
    tags: d.tag_ids.flatMap((id) => names.get(id) ?? []).sort((a, b) => a.localeCompare(b)),
    createdAt: d.created_at,
    updatedAt: d.updated_at,
  }));
}

export async function subscriberView(scope: Scope, doc: SubscriberDoc): Promise<SubscriberView> {
  const [view] = await subscriberViews(scope, [doc]);
  return view!;
}

/** Runs the side effects of a change now; the outbox sweep finishes them if this fails. */
export function finish(deps: Deps, doc: SubscriberDoc): Promise<void> {
  return deps.outbox.afterWrite(doc);
}
