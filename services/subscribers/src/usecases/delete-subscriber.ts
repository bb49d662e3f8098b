import { withOutbox } from "@emailsvc/outbox";
import { notFound } from "@emailsvc/errors";
import { DuplicateKeyError } from "@emailsvc/storage";
import { suppressionHashes } from "../domain/suppression.js";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import { outboxEntry, type Deps, type Scope } from "./deps.js";
import { logPrivacyRequest } from "./privacy-requests.js";

/**
 * Permanent deletion, the erasure of GDPR Art. 17 (spec: data, tag links and
 * history). The request is logged (privacy-requests.ts), the address is
 * suppressed (a keyed hash, domain/suppression.ts), then one write turns the
 * subscriber into a tombstone holding only ids and the subscriber.deleted
 * event; the relay then publishes the event, deletes the audit trail and the
 * tombstone, marks the request erased and compacts the datafiles
 * (messaging/outbox.ts). Delivery and campaigns erase their part on the event.
 * The address is gone at once and no longer blocks a new signup, but a create
 * of it is refused unless the person opted in again.
 */
export async function deleteSubscriber(deps: Deps, scope: Scope, id: string): Promise<void> {
  let request: string | undefined;
  for (;;) {
    const current = await scope.subscribers.findOne({ _id: id, deleted: false });
    if (!current) {
      if (!request) await logPrivacyRequest(deps, scope, "erasure", "not_found", true);
      throw notFound("subscriber");
    }
    request ??= await logPrivacyRequest(deps, scope, "erasure", "erasing", false);
    await suppress(deps, scope, current.email_key);
    const now = deps.now();
    // Guarded by the version read: an address changed meanwhile is suppressed too before the wipe.
    const doc = await scope.subscribers.updateOne(
      { _id: id, deleted: false, version: current.version },
      withOutbox<SubscriberDoc, OutboxEntry>(
        { $set: { deleted: true, email: "", email_key: `deleted:${id}`, metadata: {}, tag_ids: [], locale: "", erasure_request: request } },
        [outboxEntry(scope, now, "subscriber.deleted", null, { topic: "subscriber.deleted" })],
        now,
      ),
    );
    if (!doc) continue;
    await deps.relay.afterWrite(doc);
    return;
  }
}

/**
 * Writes the address's marker under the current key (idempotent: the marker
 * is its own id). An entry the address already has on the suppression list
 * (a hard bounce, say) keeps its reason and loses the address: the list keeps
 * refusing what it refused, by the hash alone.
 */
async function suppress(deps: Deps, scope: Scope, emailKey: string): Promise<void> {
  const hashes = suppressionHashes(deps.suppressionKeys, scope.suppressions.tenant, emailKey);
  const current = hashes[0]!;
  try {
    await scope.suppressions.insertOne({ _id: current.hash, key_id: current.keyId, created_at: deps.now(), reason: "erased", source: "erasure" });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  await scope.suppressions.updateMany({ _id: { $in: hashes.map((h) => h.hash) }, email: { $exists: true } }, { $unset: { email: true, email_id: true } });
}
