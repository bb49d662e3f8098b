import type { TenantFilter } from "@emailsvc/storage";
import type { RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { eraseRows, rowId, skipOpenRow } from "./ledger.js";

// Erasure (`subscriber.deleted`, GDPR Art. 17): nothing of the subscriber
// stays in this service. Their trigger fires go (sent or not: a pending one
// would find nobody to send to anyway), and their ledger rows leave every
// campaign while the campaigns' counts keep them as anonymous numbers.

/** Erases a subscriber's fires and ledger rows in one tenant. Idempotent; resolves how many rows went. */
export async function eraseSubscriber(repos: TenantRepositories, subscriberId: string, now: number): Promise<number> {
  await repos.fires.deleteMany({ subscriber_id: subscriberId });
  return eraseSubscriberRows(repos, subscriberId, now);
}

/**
 * Erasure of a subscriber's part of the ledger (`subscriber.deleted`): rows
 * not yet handed to delivery, and those handed over, are skipped as `erased`
 * (delivery finds nobody to send to), then every row of the subscriber, in
 * every campaign, is removed (eraseRows): the campaigns' counts keep them as
 * anonymous numbers. A snapshot that stopped at the subscriber resumes from
 * the row before. Idempotent. Returns how many rows went.
 */
export async function eraseSubscriberRows(repos: TenantRepositories, subscriberId: string, now: number): Promise<number> {
  // Rows not yet done, pending or handed to delivery, are skipped as erased first (delivery finds nobody to send to).
  for (const row of await repos.recipients.find({ subscriber_id: subscriberId, state: { $in: ["pending", "held", "queued"] } })) {
    await skipOpenRow(repos, row, "skipped.erased", now);
  }
  // The hand-over's position, in a campaign the subscriber is a recipient of, moves to the row before,
  // now that their rows are final (no row lies between the two, so none changes bucket), and before the
  // rows go: a crash in between is finished by the event redelivered.
  const campaignIds = new Set((await repos.recipients.find({ subscriber_id: subscriberId })).map((row) => row.campaign_id));
  for (const campaignId of campaignIds) {
    const campaign = await repos.campaigns.findOne({ _id: campaignId });
    const position = rowId(campaignId, subscriberId);
    if (!campaign || campaign.handed_up_to !== position) continue;
    const before = await rowBefore(repos, campaignId, subscriberId);
    await repos.campaigns.updateOne({ _id: campaignId, handed_up_to: position }, { $set: { handed_up_to: before?._id ?? "" } });
  }
  let erased = 0;
  for (;;) {
    const rows = await repos.recipients.find({ subscriber_id: subscriberId }, { limit: 500 });
    if (rows.length === 0) break;
    erased += await eraseRows(repos, rows, now);
  }
  // The resume point of a snapshot still being taken: the id of the row before (an id that
  // no longer exists resumes as well; this one names nobody erased).
  for (const campaign of await repos.campaigns.find({ snapshot_after: subscriberId })) {
    const before = await rowBefore(repos, campaign._id, subscriberId);
    await repos.campaigns.updateOne({ _id: campaign._id, snapshot_after: subscriberId }, { $set: { snapshot_after: before?.subscriber_id ?? "" } });
  }
  return erased;
}

/** The campaign's ledger row just before the subscriber's, in id order (undefined: none). */
async function rowBefore(repos: TenantRepositories, campaignId: string, subscriberId: string): Promise<RecipientDoc | undefined> {
  const [before] = await repos.recipients.find(
    { campaign_id: campaignId, _id: { $gt: `${campaignId}:`, $lt: rowId(campaignId, subscriberId) } } as TenantFilter<RecipientDoc>,
    { sort: { _id: -1 }, limit: 1 },
  );
  return before;
}
