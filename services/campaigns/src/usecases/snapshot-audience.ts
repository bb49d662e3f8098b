import { newId } from "@emailsvc/ids";
import type { TenantUpdate } from "@emailsvc/storage";
import type { CampaignDoc, RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { filterOf } from "./audience-filter.js";
import { campaignCall, type Deps } from "./deps.js";
import { rowId } from "./ledger.js";

/** Subscriber ids per AudienceService page while snapshotting (its maximum). */
export const SNAPSHOT_PAGE = 5000;

/**
 * Copies the campaign's audience into the ledger, a page of AudienceService
 * at a time, from where the last copy stopped (`snapshot_after`), until it is
 * complete or `deadline` (ms) passes. Each page is inserted with insertMany
 * (rows already there, from a copy a crash interrupted, are skipped), then
 * the resume point and the counts move in one write guarded by the status:
 * a campaign cancelled meanwhile takes no more rows (the page's are removed).
 * Resolves the campaign as it is after the last page; null when it stopped
 * being sent meanwhile.
 */
export async function snapshotAudience(
  deps: Deps,
  repos: Pick<TenantRepositories, "campaigns" | "recipients">,
  campaign: CampaignDoc,
  deadline: number,
): Promise<CampaignDoc | null> {
  let doc = campaign;
  const call = campaignCall(campaign);
  const filter = filterOf(campaign);
  while (!doc.snapshot_complete) {
    const page = await deps.audiences.page(call, filter, doc.snapshot_after ?? "", SNAPSHOT_PAGE);
    const now = deps.now();
    // No reason until a skip or a failure gives one. The time stays: an outcome that adds a field the
    // row lacked costs the embedded store more than the field saves (bench/README.md, "The ledger's writes").
    const rows: Array<Omit<RecipientDoc, "tenant">> = page.ids.map((subscriberId) => ({
      _id: rowId(campaign._id, subscriberId),
      campaign_id: campaign._id,
      subscriber_id: subscriberId,
      email_id: newId("eml"),
      state: "pending",
      updated_at: now,
    }));
    const { inserted } = rows.length > 0 ? await repos.recipients.insertMany(rows) : { inserted: 0 };
    const next = await repos.campaigns.updateOne({ _id: campaign._id, status: { $in: ["sending", "paused"] } }, {
      // A complete snapshot keeps no resume point: it would name a subscriber for as long as the campaign exists.
      $set: { snapshot_after: page.nextAfter === "" ? "" : (page.ids.at(-1) ?? doc.snapshot_after ?? ""), snapshot_complete: page.nextAfter === "", updated_at: now },
      $inc: { "counts.total": inserted, "counts.pending": inserted },
    } as unknown as TenantUpdate<CampaignDoc>);
    if (!next) {
      // Cancelled (or failed) meanwhile: this page's rows were never counted; they go.
      if (rows.length > 0) await repos.recipients.deleteMany({ _id: { $in: rows.map((r) => r._id) }, state: "pending" });
      return null;
    }
    doc = next;
    if (!doc.snapshot_complete && deps.now() >= deadline) break;
  }
  return doc;
}
