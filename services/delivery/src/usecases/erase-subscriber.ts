import { withOutbox } from "@emailsvc/outbox";
import type { Logger } from "@emailsvc/runtime";
import type { TenantCollection } from "@emailsvc/storage";
import { publicError } from "../domain/provider.js";
import type { EmailDoc, OutboxEntry } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { outboxEntry, type OutboxFlusher } from "./deps.js";
import { RetryLater } from "./deliver-email.js";

export interface ErasureDeps {
  relay: OutboxFlusher;
  logger: Logger;
  now: () => number;
}

/** Emails read per query. */
const PAGE_SIZE = 100;

/** The error a queued email of an erased subscriber fails with. */
export const ERASED_REASON = publicError("recipient_erased");

/** `to_key` of an erased email: no address, and never equal to a real one. */
export const erasedKey = (emailId: string) => `erased:${emailId}`;

/**
 * GDPR erasure of one subscriber's mail: the handler of `subscriber.deleted`.
 * For every email of the event's tenant (`scope`) linked to the subscriber, page by page:
 * its sandboxed message is deleted, then the record is scrubbed (`to` "",
 * `to_key` `erased:<email id>`, `variables_json` "{}"); status, timestamps,
 * ids, the idempotency key and request hash stay, so the account's counts hold
 * and a replay answers the scrubbed record. A queued email is failed with
 * "recipient erased" in the same write (its `email.status` leaves through the
 * outbox), so it is never sent.
 *
 * Idempotent: an erased email is left alone, so a repeated event writes
 * nothing. An email a send attempt holds right now (lease) is left to it and
 * RetryLater thrown once the rest is done: the bus delivers the event again
 * after a backoff, and that pass erases what the attempt wrote (sent, or a
 * sandbox message).
 */
export async function eraseSubscriber(
  deps: ErasureDeps,
  scope: TenantRepositories,
  target: { subscriberId: string },
): Promise<{ erased: number }> {
  const { emails, sandbox } = scope;
  let after = "";
  let erased = 0;
  let busy = 0;
  for (;;) {
    const page = await emails.find(
      { subscriber_id: target.subscriberId, ...(after ? { _id: { $gt: after } } : {}) },
      { sort: { _id: 1 }, limit: PAGE_SIZE },
    );
    if (page.length === 0) break;
    after = page[page.length - 1]!._id;

    // Kept messages first: an email is scrubbed only once its message is gone.
    await sandbox.deleteMany({ _id: { $in: page.map((doc) => doc._id) } });
    for (const doc of page) {
      const outcome = await eraseOne(deps, emails, doc);
      if (outcome === "erased") erased++;
      else if (outcome === "busy") busy++;
    }
    if (page.length < PAGE_SIZE) break;
  }
  if (erased > 0) deps.logger.info({ subscriber_id: target.subscriberId, erased }, "subscriber's emails erased");
  if (busy > 0) throw new RetryLater(`${busy} email(s) of subscriber ${target.subscriberId} are being sent; erasing again later`);
  return { erased };
}

async function eraseOne(deps: ErasureDeps, emails: TenantCollection<EmailDoc>, doc: EmailDoc): Promise<"erased" | "done" | "busy"> {
  const now = deps.now();
  const key = erasedKey(doc._id);
  const scrub = { to: "", to_key: key, variables_json: "{}" };
  if (doc.status === "queued") {
    if (doc.lease_until >= now) return "busy";
    const failed = await emails.updateOne(
      { _id: doc._id, status: "queued", lease_until: { $lt: now } },
      withOutbox<EmailDoc, OutboxEntry>(
        { $set: { ...scrub, status: "failed", failed_at: now, error: ERASED_REASON, last_error: ERASED_REASON } },
        [outboxEntry(now, "email.status", "failed")],
        now,
      ),
    );
    // Lost to a send attempt that claimed it just now: its outcome is erased on the next pass.
    if (!failed) return "busy";
    await deps.relay.afterWrite(failed);
    return "erased";
  }
  if (doc.to_key === key && doc.to === "" && doc.variables_json === "{}") return "done";
  // Statuses and timestamps stay: the account's statistics and idempotent replays still see the email.
  const written = await emails.updateOne({ _id: doc._id, status: { $ne: "queued" } }, { $set: scrub });
  return written ? "erased" : "busy";
}
