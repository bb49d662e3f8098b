import { delivery } from "@emailsvc/proto";
import type { TenantRepositories } from "../storage/repositories.js";
import { eraseRows, moveRows, rowId, type Target } from "./ledger.js";

// Delivery's answers about campaign emails (email.status) move the ledger.

/** What delivery said about one email of a campaign (email.status). */
export interface EmailOutcome {
  campaignId: string;
  subscriberId: string;
  status: string;
  /** For failed, bounced and suppressed: why, in delivery's vocabulary (the enum, never the error text). */
  failureReason: delivery.FailureReason;
}

/**
 * Where a failure of delivery's puts the recipient: skipped when delivery
 * refused them (they may not get marketing mail, which campaign mail is: its
 * decision on the subscribers service's answer) or the campaign was
 * cancelled; failed when the mail could not be sent.
 */
function bucketOfFailure(reason: delivery.FailureReason): Target {
  switch (reason) {
    case delivery.FailureReason.RECIPIENT_UNSUBSCRIBED:
      return "skipped.unsubscribed";
    case delivery.FailureReason.RECIPIENT_BOUNCED:
    case delivery.FailureReason.RECIPIENT_COMPLAINED:
    case delivery.FailureReason.RECIPIENT_SUPPRESSED:
      return "skipped.suppressed";
    case delivery.FailureReason.RECIPIENT_ERASED:
      return "skipped.erased";
    case delivery.FailureReason.CAMPAIGN_CANCELLED:
      return "skipped.cancelled";
    default:
      return "failed";
  }
}

/**
 * The statuses that move a row: sent; failed, bounced and suppressed (by
 * their reason: a suppressed recipient is skipped with it, a bounced one
 * failed); held. Others (queued, deferred, delivered, complained) leave it.
 */
const SETTLED = new Set(["sent", "failed", "bounced", "suppressed", "held"]);

/**
 * Records delivery's outcomes of a batch (sent, failed, bounced, suppressed, held) on the ledger:
 * rows with delivery (queued: at or before the campaign's hand-over position)
 * move to sent, failed or skipped, a batch per campaign and outcome, one
 * write per row; `held` (delivery did not give the email to the provider
 * because the campaign is paused) moves them back to pending (stored `held`),
 * so that the dispatcher hands them over again once the campaign is resumed (delivery's record makes that
 * the same email). Other statuses (queued, deferred, delivered, complained) change no row.
 * A row a cancel skipped while its email was already on its way, and that was
 * sent after all, is counted as sent: the ledger says what happened. So is a
 * row held by one attempt and settled by another (a redelivered batch), in
 * whichever order the two outcomes are handled.
 */
export async function recordOutcomes(repos: TenantRepositories, outcomes: readonly EmailOutcome[], now: number): Promise<void> {
  const groups = new Map<string, { campaignId: string; to: Target; ids: string[] }>();
  for (const o of outcomes) {
    if (!o.campaignId || !o.subscriberId) continue;
    if (!SETTLED.has(o.status)) continue;
    const to: Target = o.status === "sent" ? "sent" : o.status === "held" ? "pending" : bucketOfFailure(o.failureReason);
    const key = `${o.campaignId}|${to}`;
    const group = groups.get(key) ?? { campaignId: o.campaignId, to, ids: [] };
    group.ids.push(rowId(o.campaignId, o.subscriberId));
    groups.set(key, group);
  }
  for (const { campaignId, to, ids } of groups.values()) {
    let moved = await moveRows(repos, campaignId, ids, "queued", to, now);
    if (moved < ids.length && to === "sent") {
      moved += await moveRows(repos, campaignId, ids, "skipped.cancelled", "sent", now);
    }
    // An outcome after a `held` of the same email handled first: both attempts answered (the held one's
    // batch and this one's come in different events, maybe on different partitions, in either order), and
    // this one settled the email, so the row leaves the held rows rather than wait to be handed over again
    // only to be answered the same. The other order needs nothing: a `held` after it finds no queued row.
    if (moved < ids.length && to !== "pending") await moveRows(repos, campaignId, ids, "pending", to, now);
    // Delivery found the recipient erased (an erasure this service had not seen
    // yet, or a row the snapshot took just before it): the row goes as the erasure's.
    if (to === "skipped.erased") await eraseRows(repos, await repos.recipients.find({ _id: { $in: ids }, state: "skipped", reason: "erased" }), now);
  }
}

