import { withOutbox } from "@emailsvc/outbox";
import type { CrossTenantCollection } from "@emailsvc/storage";
import { tenantOfKey } from "@emailsvc/tenancy";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { outboxEntry, type Deps, type Scope } from "./deps.js";
import { logPrivacyRequest } from "./privacy-requests.js";

/** Pending subscribers erased per pass at most (the next pass takes the rest). */
export const EXPIRY_BATCH = 200;

/**
 * One pass of the expiry sweep: every `pending` subscriber (double opt-in)
 * whose confirmation deadline passed is erased as DeleteSubscriber erases
 * (a tombstone with `subscriber.deleted`, then the trail and the tombstone
 * go), logged in the privacy request log as an erasure requested by
 * `system:confirmation_expiry`, without personal data. Unlike an erasure
 * asked for, the address gets NO suppression marker: the person never
 * confirmed that the address is theirs, so nothing they chose is to be
 * kept, and the address's owner may still sign up later. Each write is
 * guarded by status and version: a confirmation in between wins. Returns how
 * many were erased.
 */
export async function expirePending(
  deps: Deps,
  expired: CrossTenantCollection<SubscriberDoc>,
  scopeOf: (tenant: string) => TenantRepositories,
): Promise<number> {
  const now = deps.now();
  const due = await expired.find({ status: "pending", confirm_by: { $lt: now } }, { limit: EXPIRY_BATCH });
  let erased = 0;
  for (const current of due) {
    if (current.deleted) continue;
    const scope: Scope = {
      ...scopeOf(current.tenant),
      call: { tenant: tenantOfKey(current.tenant), actor: "system:confirmation_expiry", requestId: current._id },
      origin: { source: "", ip: "", userAgent: "" },
    };
    const request = await logPrivacyRequest(deps, scope, "erasure", "erasing", false);
    const doc = await scope.subscribers.updateOne(
      { _id: current._id, version: current.version, status: "pending", deleted: false },
      withOutbox<SubscriberDoc, OutboxEntry>(
        {
          $set: { deleted: true, email: "", email_key: `deleted:${current._id}`, metadata: {}, tag_ids: [], locale: "", confirm_by: null, erasure_request: request },
        },
        [outboxEntry(scope, now, "subscriber.deleted", null, { topic: "subscriber.deleted" })],
        now,
      ),
    );
    if (!doc) {
      // Confirmed (or changed) meanwhile: nothing erased.
      await scope.privacyRequests.updateOne({ _id: request }, { $set: { outcome: "not_found", completed_at: deps.now() } });
      continue;
    }
    await deps.relay.afterWrite(doc);
    erased++;
  }
  return erased;
}

