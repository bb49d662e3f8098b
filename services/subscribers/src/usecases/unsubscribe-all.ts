import { withOutbox } from "@emailsvc/outbox";
import { AppError } from "@emailsvc/errors";
import { emailKey, validateEmail, type SubscriberView } from "../domain/subscriber.js";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import { createSubscriber } from "./create-subscriber.js";
import { isSuppressed, loadSubscriber, outboxEntry, subscriberView, type Deps, type Scope } from "./deps.js";

// "Unsubscribe from everything": the one implementation the preference
// portal's button and the one-click link of every marketing mail share. No
// more marketing mail, by the person's own choice:
//  - active becomes unsubscribed;
//  - bounced and complained keep their status (the mail system's verdict:
//    no mail at all) and the opt-out is recorded beside it (`opted_out_at`,
//    audited `subscriber.opted_out`), so that lifting the verdict later
//    (update-subscriber.ts) leads to unsubscribed, not back to marketing;
//  - every public tag held is left, so that no list shows as subscribed and a
//    list joined later brings back that list alone; private tags are the
//    integrator's segments and stay (the status keeps them silent). Each
//    `subscriber.tag_removed` says it was caused by this (no trigger on it
//    fires).
// One guarded write of the subscriber's document with every entry in its
// outbox, so a crash leaves all of it or none of it.

export type UnsubscribeAllOutcome = "unsubscribed" | "already_unsubscribed" | "opt_out_recorded" | "address_recorded" | "address_suppressed";

export interface UnsubscribeAllResult {
  /** The subscriber afterwards; undefined for a suppressed address (nothing stored). */
  subscriber: SubscriberView | undefined;
  outcome: UnsubscribeAllOutcome;
}

export type UnsubscribeAllTarget = { subscriberId: string } | { email: unknown };

export async function unsubscribeAll(deps: Deps, scope: Scope, target: UnsubscribeAllTarget): Promise<UnsubscribeAllResult> {
  if ("subscriberId" in target) return unsubscribeSubscriber(deps, scope, await loadSubscriber(scope, target.subscriberId));
  return unsubscribeAddress(deps, scope, validateEmail(target.email));
}

async function unsubscribeSubscriber(deps: Deps, scope: Scope, current: SubscriberDoc): Promise<UnsubscribeAllResult> {
  const now = deps.now();
  const set: Partial<Pick<SubscriberDoc, "status" | "opted_out_at" | "tag_ids">> = {};
  const entries: OutboxEntry[] = [];
  let outcome: UnsubscribeAllOutcome = "already_unsubscribed";
  if (current.status === "active") {
    set.status = "unsubscribed";
    entries.push(
      outboxEntry(scope, now, "subscriber.status_changed", { from: "active", to: "unsubscribed" }, { topic: "subscriber.status_changed", from: "active", to: "unsubscribed" }),
    );
    outcome = "unsubscribed";
  } else if ((current.status === "bounced" || current.status === "complained") && current.opted_out_at == null) {
    set.opted_out_at = now;
    // Audit only: the status, and so who may be mailed, does not change now.
    entries.push(outboxEntry(scope, now, "subscriber.opted_out", { status: current.status }, null));
    outcome = "opt_out_recorded";
  }
  const held = current.tag_ids.length > 0 ? await scope.tags.find({ _id: { $in: current.tag_ids }, is_public: true }) : [];
  if (held.length > 0) {
    const left = new Set(held.map((tag) => tag._id));
    set.tag_ids = current.tag_ids.filter((id) => !left.has(id));
    // Each left tag's event says why (cause unsubscribe_all, in the audit
    // trail as its reason): a `subscriber.tag_removed` trigger must not mail
    // "you left a list" to someone who just asked for no more mail.
    for (const tag of held) {
      entries.push(
        outboxEntry(scope, now, "subscriber.tag_removed", { tag_id: tag._id, tag: tag.name, reason: "unsubscribe_all" }, {
          topic: "subscriber.tag_removed",
          tag_id: tag._id,
          cause: "unsubscribe_all",
        }),
      );
    }
  }
  if (entries.length === 0) return { subscriber: await subscriberView(scope, current), outcome };
  // Guarded by the version read: a change meanwhile (a tag joined, a status
  // set) makes this miss, and it is decided again on the newer document.
  const doc = await scope.subscribers.updateOne(
    { _id: current._id, version: current.version, deleted: false },
    withOutbox<SubscriberDoc, OutboxEntry>({ $set: set }, entries, now),
  );
  if (!doc) return unsubscribeSubscriber(deps, scope, await loadSubscriber(scope, current._id));
  await deps.relay.afterWrite(doc);
  return { subscriber: await subscriberView(scope, doc), outcome };
}

/**
 * An address, subscriber or not (mail sent to it directly): its subscriber
 * unsubscribes; an address that is nobody's is kept as a subscriber created
 * unsubscribed, the record that refuses later marketing mail to it, unless
 * it is suppressed already (erased at its owner's request).
 */
async function unsubscribeAddress(deps: Deps, scope: Scope, email: string): Promise<UnsubscribeAllResult> {
  const key = emailKey(email);
  // Twice at most: a create that loses to one made meanwhile (an import, say) finds that one.
  for (let attempt = 0; ; attempt++) {
    const existing = await scope.subscribers.findOne({ email_key: key, deleted: false });
    if (existing) return unsubscribeSubscriber(deps, scope, existing);
    if (await isSuppressed(deps, scope, key)) return { subscriber: undefined, outcome: "address_suppressed" };
    try {
      const created = await createSubscriber(deps, scope, { email, tags: [], metadata: undefined, status: "unsubscribed" });
      return { subscriber: created, outcome: "address_recorded" };
    } catch (err) {
      // Erased meanwhile: suppressed, which is what was asked.
      if (err instanceof AppError && err.code === "subscriber_suppressed") return { subscriber: undefined, outcome: "address_suppressed" };
      if (attempt > 0 || !(err instanceof AppError) || err.code !== "email_taken") throw err;
    }
  }
}
