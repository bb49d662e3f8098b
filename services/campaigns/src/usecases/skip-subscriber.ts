import type { RecipientState, SkipReason } from "../domain/campaign.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { moveRows, type Bucket } from "./ledger.js";

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
