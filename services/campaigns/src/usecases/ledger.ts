import { delivery } from "@emailsvc/proto";
import type { TenantCollection, TenantFilter, TenantUpdate } from "@emailsvc/storage";
import { SKIP_REASONS, type RecipientCounts, type RecipientState, type SkipReason } from "../domain/campaign.js";
import type { CampaignDoc, RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

// The ledger (campaign_recipients) and the counts on the campaign document
// move together: every change of rows is a guarded updateMany from one state,
// and the number it matched moves between two buckets of the counts in one
// `$inc`, so the counts add up to the total whenever they are read. A crash
// between the two writes leaves the counts behind the ledger; `reconcile`
// recounts them from the ledger when a dispatcher takes a campaign over from
// another (or from its own run that failed), when it finishes, and when the
// ledger has nothing left in flight while the counts say otherwise. A recount
// is a count of the rows then a write of the counts, so a move between the two
// (a row written, its count not yet) is lost or counted twice: it runs when no
// moves are expected, never at a plain resume.

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

/** The rows of a campaign by bucket, as the ledger holds them. */
async function countRows(recipients: TenantCollection<RecipientDoc>, campaignId: string): Promise<RecipientCounts> {
  const count = (state: RecipientState, reason?: string) => recipients.count({ campaign_id: campaignId, state, ...(reason ? { reason } : {}) });
  const [pending, queued, sent, failed, ...skipped] = await Promise.all([
    count("pending"),
    count("queued"),
    count("sent"),
    count("failed"),
    ...SKIP_REASONS.map((reason) => count("skipped", reason)),
  ]);
  const bySkip = Object.fromEntries(SKIP_REASONS.map((reason, i) => [reason, skipped[i] ?? 0])) as Record<SkipReason, number>;
  return { total: 0, pending: pending!, queued: queued!, sent: sent!, failed: failed!, skipped: bySkip };
}

/** Adds `n` recipients of `bucket` to counts (total apart). */
function addTo(counts: RecipientCounts, bucket: Bucket, n: number): void {
  const [state, reason] = bucket.split(".") as [RecipientState, SkipReason?];
  if (state === "skipped") counts.skipped[reason!] += n;
  else counts[state] += n;
}

/** The bucket a row is in. */
export function bucketOf(row: Pick<RecipientDoc, "state" | "reason">): Bucket {
  return row.state === "skipped" ? (`skipped.${row.reason as SkipReason}` as Bucket) : (row.state as Bucket);
}

/**
 * The counts of a campaign recounted from its ledger (one count per bucket),
 * with the rows erasures removed (`erased_rows`; rows counted there and not
 * yet removed are taken once). Read again when an erasure moved meanwhile.
 */
export async function countLedger(repos: Pick<TenantRepositories, "campaigns" | "recipients">, campaignId: string): Promise<RecipientCounts> {
  for (let attempt = 0; ; attempt++) {
    const before = await repos.campaigns.findOne({ _id: campaignId });
    const counts = await countRows(repos.recipients, campaignId);
    const after = await repos.campaigns.findOne({ _id: campaignId });
    const erasures = (doc: CampaignDoc | null) => JSON.stringify([doc?.erased_rows ?? {}, doc?.erasing ?? []]);
    if (erasures(before) !== erasures(after) && attempt < 5) continue;
    const erased = after?.erased_rows ?? {};
    counts.sent += erased.sent ?? 0;
    counts.failed += erased.failed ?? 0;
    for (const reason of SKIP_REASONS) counts.skipped[reason] += erased.skipped?.[reason] ?? 0;
    const erasing = after?.erasing ?? [];
    if (erasing.length > 0) {
      for (const row of await repos.recipients.find({ campaign_id: campaignId, email_id: { $in: erasing } })) addTo(counts, bucketOf(row), -1);
    }
    counts.total = counts.pending + counts.queued + counts.sent + counts.failed + SKIP_REASONS.reduce((sum, r) => sum + counts.skipped[r], 0);
    return counts;
  }
}

/** Sets a campaign's counts to what its ledger says. */
export async function reconcile(repos: Pick<TenantRepositories, "campaigns" | "recipients">, campaignId: string): Promise<RecipientCounts> {
  const counts = await countLedger(repos, campaignId);
  await repos.campaigns.updateOne({ _id: campaignId }, { $set: { counts } });
  return counts;
}

/**
 * Removes rows from the ledger, keeping their campaigns' counts: a row still
 * pending or queued is first skipped as `erased` (a row in flight would
 * otherwise be counted as queued for ever); then, per row, its bucket is
 * counted in the campaign's `erased_rows` with its email id in `erasing` (one
 * write, guarded by that id not being there yet), the row deleted, and the id
 * pulled. A crash anywhere in between is finished by the next pass, and a
 * recount (countLedger) takes a row counted and not yet deleted once.
 */
export async function eraseRows(repos: Pick<TenantRepositories, "campaigns" | "recipients">, rows: readonly RecipientDoc[], now: number): Promise<number> {
  let erased = 0;
  for (const found of rows) {
    let row: RecipientDoc | null = found;
    while (row && (row.state === "pending" || row.state === "queued")) {
      await moveRows(repos, row.campaign_id, { _id: row._id }, row.state, "skipped.erased", now);
      row = await repos.recipients.findOne({ _id: found._id });
    }
    if (!row) continue;
    await repos.campaigns.updateOne(
      { _id: row.campaign_id, erasing: { $ne: row.email_id } },
      { $inc: { [`erased_rows.${bucketOf(row)}`]: 1 }, $addToSet: { erasing: { $each: [row.email_id] } } } as unknown as TenantUpdate<CampaignDoc>,
    );
    if (await repos.recipients.deleteOne({ _id: row._id })) erased++;
    await repos.campaigns.updateOne({ _id: row.campaign_id }, { $pull: { erasing: row.email_id } });
  }
  return erased;
}

