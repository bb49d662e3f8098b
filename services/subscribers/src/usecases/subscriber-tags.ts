import { withOutbox } from "@emailsvc/outbox";
import { notFound } from "@emailsvc/errors";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import type { SubscriberView } from "../domain/subscriber.js";
import { tagKey, validateTagName, validateTagNames } from "../domain/tag.js";
import { ensureTags } from "./ensure-tags.js";
import { loadSubscriber, outboxEntry, subscriberView, type Deps, type Scope } from "./deps.js";

/**
 * Adds tags (created when unknown); never replaces the existing ones. Joined
 * by the person on the preference portal (source `portal`), it is their
 * opt-in again: an opt-out recorded beside a bounced or complained status
 * (opted_out_at, unsubscribe-all.ts) is withdrawn with it, so that clearing
 * the bounce later makes them active, not unsubscribed (update-subscriber.ts).
 * An integrator's change (source `api`, `import`) withdraws nothing: only the
 * person can take back their own opt-out.
 */
export async function addTags(deps: Deps, scope: Scope, subscriberId: string, rawNames: unknown[]): Promise<SubscriberView> {
  const names = validateTagNames(rawNames);
  const current = await loadSubscriber(scope, subscriberId);
  if (names.length === 0) return subscriberView(scope, current);
  const tags = await ensureTags(deps, scope, names);
  const added = tags.filter((t) => !current.tag_ids.includes(t._id));
  if (added.length === 0) return subscriberView(scope, current);

  const now = deps.now();
  const entries = added.map((t) =>
    outboxEntry(scope, now, "subscriber.tag_added", { tag_id: t._id, tag: t.name }, { topic: "subscriber.tag_added", tag_id: t._id }),
  );
  const optsInAgain = scope.origin?.source === "portal" && current.opted_out_at != null;
  // $addToSet keeps this right even when another request added one of these meanwhile.
  const doc = await scope.subscribers.updateOne(
    { _id: subscriberId, deleted: false },
    withOutbox<SubscriberDoc, OutboxEntry>(
      { $addToSet: { tag_ids: { $each: added.map((t) => t._id) } }, ...(optsInAgain ? { $set: { opted_out_at: null } } : {}) },
      entries,
      now,
    ),
  );
  if (!doc) throw notFound("subscriber");
  await deps.relay.afterWrite(doc);
  return subscriberView(scope, doc);
}

/** Removes one tag by name; the other tags stay. 404 when the subscriber does not have it. */
export async function removeTag(deps: Deps, scope: Scope, subscriberId: string, rawName: unknown): Promise<SubscriberView> {
  const name = validateTagName(rawName, "tag_name");
  const current = await loadSubscriber(scope, subscriberId);
  const tag = await scope.tags.findOne({ name_key: tagKey(name) });
  if (!tag || !current.tag_ids.includes(tag._id)) throw notFound("tag on this subscriber");
  const now = deps.now();
  const doc = await scope.subscribers.updateOne(
    { _id: subscriberId, deleted: false, tag_ids: tag._id },
    withOutbox<SubscriberDoc, OutboxEntry>(
      { $pull: { tag_ids: tag._id } },
      [outboxEntry(scope, now, "subscriber.tag_removed", { tag_id: tag._id, tag: tag.name }, { topic: "subscriber.tag_removed", tag_id: tag._id })],
      now,
    ),
  );
  if (!doc) throw notFound("tag on this subscriber"); // removed meanwhile
  await deps.relay.afterWrite(doc);
  return subscriberView(scope, doc);
}
