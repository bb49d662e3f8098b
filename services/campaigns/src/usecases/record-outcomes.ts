import type { TenantRepositories } from "../storage/repositories.js";
import { eraseRows, moveRows, rowId, type Bucket } from "./ledger.js";

// Delivery's answers about campaign emails (email.status) move the ledger.

/** What delivery said about one email of a campaign (email.status). */
export interface EmailOutcome {
  campaignId: string;
  subscriberId: string;
  status: string;
  /** For failed: delivery's public error code. */
  reason: string;
}

/** Where a failure of delivery's puts the recipient: skipped for a reason of ours, else failed. */
function bucketOfFailure(reason: string): Bucket {
  switch (reason) {
    case "recipient_unsubscribed":
      return "skipped.unsubscribed";
    case "recipient_suppressed":
      return "skipped.suppressed";
    case "recipient_erased":
      return "skipped.erased";
    case "campaign_cancelled":
      return "skipped.cancelled";
    default:
      return "failed";
  }
}

/**
 * Records delivery's outcomes of a batch (sent, failed, held) on the ledger:
 * queued rows move to sent, failed or skipped, a batch per campaign and
 * outcome; `held` (delivery did not give the email to the provider because the
 * campaign is paused) moves them back to pending, so that the dispatcher hands
 * them over again once the campaign is resumed (delivery's record makes that
 * the same email). Other statuses (queued, delivered, bounced) change no row.
 * A row a cancel skipped while its email was already on its way, and that was
 * sent after all, is counted as sent: the ledger says what happened.
 */
export async function recordOutcomes(repos: TenantRepositories, outcomes: readonly EmailOutcome[], now: number): Promise<void> {
  const groups = new Map<string, { campaignId: string; to: Bucket; ids: string[] }>();
  for (const o of outcomes) {
    if (!o.campaignId || !o.subscriberId) continue;
    if (o.status !== "sent" && o.status !== "failed" && o.status !== "held") continue;
    const to: Bucket = o.status === "sent" ? "sent" : o.status === "held" ? "pending" : bucketOfFailure(o.reason);
    const key = `${o.campaignId}|${to}`;
    const group = groups.get(key) ?? { campaignId: o.campaignId, to, ids: [] };
    group.ids.push(rowId(o.campaignId, o.subscriberId));
    groups.set(key, group);
  }
  for (const { campaignId, to, ids } of groups.values()) {
    const moved = await moveRows(repos, campaignId, { _id: { $in: ids } }, "queued", to, now);
    if (moved < ids.length && to === "sent") {
      await moveRows(repos, campaignId, { _id: { $in: ids } }, "skipped.cancelled", "sent", now);
    }
    // Delivery found the recipient erased (an erasure this service had not seen
    // yet, or a row the snapshot took just before it): the row goes as the erasure's.
    if (to === "skipped.erased") await eraseRows(repos, await repos.recipients.find({ _id: { $in: ids }, state: "skipped", reason: "erased" }), now);
  }
}

