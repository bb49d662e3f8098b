import { withOutbox } from "@emailsvc/outbox";
import { notFound } from "@emailsvc/runtime";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import { outboxEntry, type Deps, type Scope } from "./deps.js";

/**
 * Permanent deletion (spec: data, tag links and history). One write turns the
 * subscriber into a tombstone holding only ids and the subscriber.deleted
 * event; the relay then publishes the event, deletes the audit trail and the
 * tombstone. The address is gone at once and no longer blocks a new signup.
 */
export async function deleteSubscriber(deps: Deps, scope: Scope, id: string): Promise<void> {
  const now = deps.now();
  const doc = await scope.subscribers.updateOne(
    { _id: id, deleted: false },
    withOutbox<SubscriberDoc, OutboxEntry>(
      { $set: { deleted: true, email: "", email_key: `deleted:${id}`, metadata: {}, tag_ids: [] } },
      [outboxEntry(scope, now, "subscriber.deleted", null, { topic: "subscriber.deleted" })],
      now,
    ),
  );
  if (!doc) throw notFound("subscriber");
  await deps.relay.afterWrite(doc);
}
