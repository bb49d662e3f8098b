import { AppError, notFound } from "@emailsvc/errors";
import { withOutbox } from "@emailsvc/outbox";
import type { SubscriberView } from "../domain/subscriber.js";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import { outboxEntry, subscriberView, type Deps, type Scope } from "./deps.js";

/**
 * The person clicked their confirmation link (the portal verified its
 * signature and expiry): `pending` → `active`, the deadline dropped. The
 * `subscriber.status_changed` audit record, with `reason: "confirmed"` and
 * the click's source, IP and user agent, is the confirmation in the consent
 * record. Not pending any more: FAILED_PRECONDITION `not_pending` (a second
 * click, or an unsubscribe meanwhile, is not undone); gone (expired and
 * erased, or never there): NOT_FOUND.
 */
export async function confirmSubscriber(deps: Deps, scope: Scope, subscriberId: string): Promise<SubscriberView> {
  for (;;) {
    const current = await scope.subscribers.findOne({ _id: subscriberId, deleted: false });
    if (!current) throw notFound("subscriber");
    if (current.status !== "pending") {
      throw new AppError("unprocessable", "not_pending", `the subscriber is ${current.status}, not pending confirmation`);
    }
    const now = deps.now();
    const entry = outboxEntry(scope, now, "subscriber.status_changed", { from: "pending", to: "active", reason: "confirmed" }, {
      topic: "subscriber.status_changed",
      from: "pending",
      to: "active",
    });
    const update = withOutbox<SubscriberDoc, OutboxEntry>({ $set: { status: "active", confirm_by: null } }, [entry], now);
    // Guarded by status and version: an expiry or another click in between wins, and this one reads again.
    const doc = await scope.subscribers.updateOne({ _id: current._id, version: current.version, status: "pending", deleted: false }, update);
    if (!doc) continue;
    await deps.relay.afterWrite(doc);
    return subscriberView(scope, doc);
  }
}
