import type { TenantCollection, TenantFilter, TenantUpdate } from "@emailsvc/storage";
import { SKIP_REASONS, type RecipientCounts, type RecipientState, type SkipReason } from "../domain/campaign.js";
import type { CampaignDoc, RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

// The ledger (campaign_recipients) and the counts on the campaign document
// move together: every change of rows is a guarded updateMany from one state,
// and the number it matched moves between two buckets of the counts in one
// `$inc`, so the counts add up to the total whenever they are read. A crash
// between the two writes leaves the counts behind the ledger; `reconcile`
// recounts them from the ledger when a dispatcher takes a campaign over and
// when it finishes.

/** A bucket of the counts: a state, or skipped with its reason. */
export type Bucket = Exclude<RecipientState, "skipped"> | `skipped.${SkipReason}`;

/** The row id of a campaign's recipient. */
export function rowId(campaignId: string, subscriberId: string): string {
  return `${campaignId}:${subscriberId}`;
}

/** The bounds of a campaign's rows in id order (`:` < `;`). */
export function rowRange(campaignId: string, after = ""): { $gt: string; $lt: string } {
  return { $gt: after || `${campaignId}:`, $lt: `${campaignId};` };
}

/** Moves `n` recipients of a campaign from one bucket of its counts to another. */
export async function moveCounts(campaigns: TenantCollection<CampaignDoc>, campaignId: string, from: Bucket, to: Bucket, n: number): Promise<void> {
  if (n <= 0 || from === to) return;
  await campaigns.updateOne({ _id: campaignId }, { $inc: { [`counts.${from}`]: -n, [`counts.${to}`]: n } } as unknown as TenantUpdate<CampaignDoc>);
}

/**
 * Moves rows of a campaign from one bucket to another (guarded by the state
 * they leave), counts included; resolves how many moved.
 */
export async function moveRows(
  repos: Pick<TenantRepositories, "campaigns" | "recipients">,
  campaignId: string,
  filter: TenantFilter<RecipientDoc>,
  from: Bucket,
  to: Bucket,
  now: number,
): Promise<number> {
  const [state, reason = ""] = to.split(".") as [RecipientState, string?];
  const [fromState, fromReason] = from.split(".") as [RecipientState, string?];
  const guard: TenantFilter<RecipientDoc> = { ...filter, campaign_id: campaignId, state: fromState, ...(fromReason ? { reason: fromReason } : {}) };
  const moved = await repos.recipients.updateMany(guard, { $set: { state, reason, updated_at: now } });
  await moveCounts(repos.campaigns, campaignId, from, to, moved);
  return moved;
}

/** The counts of a campaign recounted from its ledger (one count per bucket). */
export async function countLedger(recipients: TenantCollection<RecipientDoc>, campaignId: string): Promise<RecipientCounts> {
  const count = (state: RecipientState, reason?: string) => recipients.count({ campaign_id: campaignId, state, ...(reason ? { reason } : {}) });
  const [pending, queued, sent, failed, ...skipped] = await Promise.all([
    count("pending"),
    count("queued"),
    count("sent"),
    count("failed"),
    ...SKIP_REASONS.map((reason) => count("skipped", reason)),
  ]);
  const bySkip = Object.fromEntries(SKIP_REASONS.map((reason, i) => [reason, skipped[i] ?? 0])) as Record<SkipReason, number>;
  const total = pending! + queued! + sent! + failed! + skipped.reduce((a, b) => a + b, 0);
  return { total, pending: pending!, queued: queued!, sent: sent!, failed: failed!, skipped: bySkip };
}

/** Sets a campaign's counts to what its ledger says. */
export async function reconcile(repos: Pick<TenantRepositories, "campaigns" | "recipients">, campaignId: string): Promise<RecipientCounts> {
  const counts = await countLedger(repos.recipients, campaignId);
  await repos.campaigns.updateOne({ _id: campaignId }, { $set: { counts } });
  return counts;
}

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
 * Records delivery's outcomes of a batch (sent, failed) on the ledger: queued
 * rows move to sent, failed or skipped, a batch per campaign and outcome.
 * Other statuses (queued, delivered, bounced) change no row. A row a cancel
 * skipped while its email was already on its way, and that was sent after
 * all, is counted as sent: the ledger says what happened.
 */
export async function recordOutcomes(repos: TenantRepositories, outcomes: readonly EmailOutcome[], now: number): Promise<void> {
  const groups = new Map<string, { campaignId: string; to: Bucket; ids: string[] }>();
  for (const o of outcomes) {
    if (!o.campaignId || !o.subscriberId) continue;
    if (o.status !== "sent" && o.status !== "failed") continue;
    const to: Bucket = o.status === "sent" ? "sent" : bucketOfFailure(o.reason);
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
  }
}

/**
 * A subscriber stopped being mailable (unsubscribed, bounced, complained,
 * erased): their rows not yet handed to delivery, in every campaign, are
 * skipped with the reason; erasure also takes the rows already handed over
 * (delivery finds no one to send to).
 */
export async function skipSubscriber(repos: TenantRepositories, subscriberId: string, reason: SkipReason, now: number): Promise<number> {
  const states: RecipientState[] = reason === "erased" ? ["pending", "queued"] : ["pending"];
  const rows = await repos.recipients.find({ subscriber_id: subscriberId, state: { $in: states } });
  let skipped = 0;
  for (const row of rows) {
    skipped += await moveRows(repos, row.campaign_id, { _id: row._id }, row.state as Bucket, `skipped.${reason}`, now);
  }
  return skipped;
}
