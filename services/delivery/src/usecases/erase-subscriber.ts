import { withOutbox } from "@emailsvc/outbox";
import type { Logger } from "@emailsvc/telemetry";
import type { TenantCollection, TenantUpdate } from "@emailsvc/storage";
import { isFinal, PENDING, PENDING_STATUSES } from "../domain/email.js";
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
 * What an erased email keeps: its id, template, status, timestamps, provider
 * and Message-ID (the account's statistics still add up), and nothing that
 * names the person: no address, variables, rendered subject, link to the
 * subscriber, nor the caller's idempotency key and request hash (a key may
 * name the person, and the hash covers the address). A send repeating the
 * erased key is a new request.
 */
function scrub(emailId: string): Pick<TenantUpdate<EmailDoc>, "$set" | "$unset"> {
  return {
    $set: { to: "", to_key: erasedKey(emailId), variables_json: "{}", idempotency_key: "", idem_key: `none:${emailId}`, request_hash: "" },
    $unset: { subscriber_id: true, subject: true },
  };
}

/**
 * GDPR erasure of one subscriber's mail: the handler of `subscriber.deleted`.
 * Every email of the event's tenant (`scope`) linked to the subscriber is
 * erased, page by page, and so is every other email to an address those had
 * (mail sent before the address was a subscriber's, or while the subscribers
 * service could not tell): its sandboxed message is deleted, then the record
 * is scrubbed (see `scrub`). A queued or deferred email is failed with "recipient erased"
 * in the same write (its `email.status` leaves through the outbox), so it is
 * never sent.
 *
 * Idempotent: an erased email matches neither the subscriber nor an address,
 * so a repeated event writes nothing. An email a send attempt holds right now
 * (lease) is left to it and RetryLater thrown once the rest is done: the bus
 * delivers the event again after a backoff, and that pass erases what the
 * attempt wrote (sent, or a sandbox message).
 */
export async function eraseSubscriber(
  deps: ErasureDeps,
  scope: TenantRepositories,
  target: { subscriberId: string },
): Promise<{ erased: number }> {
  const { emails } = scope;
  const addresses = new Set<string>();
  const linked = await erasePages(deps, scope, (after) =>
    emails.find({ subscriber_id: target.subscriberId, ...(after ? { _id: { $gt: after } } : {}) }, { sort: { _id: 1 }, limit: PAGE_SIZE }),
    addresses,
  );
  let erased = linked.erased;
  let busy = linked.busy;
  for (const address of addresses) {
    const sameAddress = await erasePages(deps, scope, (after) =>
      emails.find({ to_key: address, ...(after ? { _id: { $gt: after } } : {}) }, { sort: { _id: 1 }, limit: PAGE_SIZE }),
      addresses,
    );
    erased += sameAddress.erased;
    busy += sameAddress.busy;
  }
  if (erased > 0) deps.logger.info({ subscriber_id: target.subscriberId, erased }, "subscriber's emails erased");
  if (busy > 0) throw new RetryLater(`${busy} email(s) of subscriber ${target.subscriberId} are being sent; erasing again later`);
  return { erased };
}

/** Erases the emails `page` finds, page after page; the addresses they were sent to go into `addresses`. */
async function erasePages(
  deps: ErasureDeps,
  scope: TenantRepositories,
  page: (after: string) => Promise<EmailDoc[]>,
  addresses: Set<string>,
): Promise<{ erased: number; busy: number }> {
  let after = "";
  let erased = 0;
  let busy = 0;
  for (;;) {
    const docs = await page(after);
    if (docs.length === 0) break;
    after = docs[docs.length - 1]!._id;
    for (const doc of docs) if (doc.to_key && !doc.to_key.startsWith("erased:")) addresses.add(doc.to_key);
    // Kept messages first (their bodies, then their rows): an email is scrubbed only once its message is gone.
    await scope.sandbox.deleteForEmails(docs.map((doc) => doc._id));
    for (const doc of docs) {
      const outcome = await eraseOne(deps, scope.emails, doc);
      if (outcome === "erased") erased++;
      else busy++;
    }
    if (docs.length < PAGE_SIZE) break;
  }
  return { erased, busy };
}

async function eraseOne(deps: ErasureDeps, emails: TenantCollection<EmailDoc>, doc: EmailDoc): Promise<"erased" | "busy"> {
  const now = deps.now();
  const { $set, $unset } = scrub(doc._id);
  if (!isFinal(doc.status)) {
    if (doc.lease_until >= now) return "busy";
    const failed = await emails.updateOne(
      { _id: doc._id, status: PENDING, lease_until: { $lt: now } },
      withOutbox<EmailDoc, OutboxEntry>(
        {
          $set: { ...$set, status: "failed", failed_at: now, error: ERASED_REASON, failure_reason: "recipient_erased", last_error: ERASED_REASON, next_attempt_at: 0 },
          $unset,
          $push: { status_history: { $each: [{ status: "failed", at: now, detail: "recipient_erased" }] } },
        },
        [outboxEntry(now, "email.status", "failed")],
        now,
      ),
    );
    // Lost to a send attempt that claimed it just now: its outcome is erased on the next pass.
    if (!failed) return "busy";
    await deps.relay.afterWrite(failed);
    return "erased";
  }
  // Statuses and timestamps stay: the account's statistics still see the email.
  const written = await emails.updateOne({ _id: doc._id, status: { $nin: [...PENDING_STATUSES] } }, { $set, $unset });
  return written ? "erased" : "busy";
}
