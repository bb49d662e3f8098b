import type { CampaignsExportPart } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import type { TenantCollection, TenantFilter } from "@emailsvc/storage";
import type { RecipientState } from "../domain/campaign.js";
import type { CampaignDoc, FireDoc, RecipientDoc } from "../storage/documents.js";
import { bucketOf, positionOf } from "./ledger.js";
import type { Scope } from "./deps.js";

// Campaigns' part of a subscriber's data export (GDPR Art. 15): the campaigns
// the subscriber was a recipient of (their ledger rows), and every trigger
// fire recorded for them: sent, skipped or failed with its reason, or pending. Queries by the subscriber's id within the
// call's tenant only.

/** Rows read per query. */
const PAGE = 500;
/** Most ledger rows, and most fires, one export takes; beyond, RESOURCE_EXHAUSTED (`export_too_large`). */
export const EXPORT_MAX_ROWS = 20_000;

const time = (ms: number) => new Date(ms).toISOString();

/** Every document of the subscriber in a collection, in id order, a page at a time. */
async function all<T extends RecipientDoc | FireDoc>(collection: TenantCollection<T>, filter: TenantFilter<T>, what: string): Promise<T[]> {
  const docs: T[] = [];
  let after = "";
  for (;;) {
    const page = await collection.find({ ...filter, ...(after ? { _id: { $gt: after } } : {}) } as TenantFilter<T>, { sort: { _id: 1 }, limit: PAGE });
    docs.push(...page);
    if (docs.length > EXPORT_MAX_ROWS) {
      throw new AppError("too_large", "export_too_large", `the subscriber has more than ${EXPORT_MAX_ROWS} ${what}; ask the operator for an export`);
    }
    if (page.length < PAGE) return docs;
    after = page[page.length - 1]!._id;
  }
}

export async function exportSubscriberCampaigns(scope: Scope, subscriberId: string): Promise<string> {
  // An empty id is no subscriber's: `{…: []}`, as for an unknown one.
  const [rows, fires] =
    subscriberId === ""
      ? [[], []]
      : await Promise.all([
          all(scope.recipients, { subscriber_id: subscriberId }, "campaign memberships"),
          all(scope.fires, { subscriber_id: subscriberId }, "trigger sends"),
        ]);
  const names = new Map<string, string>();
  const campaigns = new Map<string, CampaignDoc>();
  const campaignIds = [...new Set(rows.map((r) => r.campaign_id))];
  for (let i = 0; i < campaignIds.length; i += PAGE) {
    for (const c of await scope.campaigns.find({ _id: { $in: campaignIds.slice(i, i + PAGE) } })) {
      names.set(c._id, c.name);
      campaigns.set(c._id, c);
    }
  }
  // Fires recorded before they kept their event type: the trigger's, if it still exists.
  const eventTypes = new Map<string, string>();
  const unknown = [...new Set(fires.filter((f) => !f.event_type).map((f) => f.trigger_id))];
  for (let i = 0; i < unknown.length; i += PAGE) {
    for (const t of await scope.triggers.find({ _id: { $in: unknown.slice(i, i + PAGE) } })) eventTypes.set(t._id, t.event_type);
  }
  return JSON.stringify({
    campaign_memberships: rows
      .sort((a, b) => a.campaign_id.localeCompare(b.campaign_id))
      .map((r) => ({
        campaign_id: r.campaign_id,
        campaign_name: names.get(r.campaign_id) ?? null,
        // What the counts call it: with delivery (queued) at or before the hand-over's position.
        state: bucketOf(r, positionOf(campaigns.get(r.campaign_id))).split(".")[0] as RecipientState,
        reason: r.reason || null,
        updated_at: time(r.updated_at),
      })),
    trigger_sends: fires.map((f) => ({
      trigger_id: f.trigger_id,
      event_type: f.event_type ?? eventTypes.get(f.trigger_id) ?? null,
      state: f.state,
      reason: f.reason || null,
      // Its last change: a sent fire's send, a skipped or failed one's decision.
      fired_at: time(f.updated_at),
    })),
  } satisfies CampaignsExportPart);
}
