import { pageById } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import type { CampaignStatus, CampaignView } from "../domain/campaign.js";
import type { CampaignDoc } from "../storage/documents.js";
import type { Page, Scope } from "./deps.js";
import { campaignView } from "./views.js";

/** The tenant's campaigns, oldest first, a page at a time; with `statuses`, only those in one of them. */
export async function listCampaigns(scope: Scope, input: { limit: number; cursor: string; statuses?: readonly CampaignStatus[] }): Promise<Page<CampaignView>> {
  const statuses = [...new Set(input.statuses ?? [])].sort();
  const page = await pageById(input, { idPrefix: "cmp", filterKey: statuses.join(",") }, ({ range, options }) =>
    scope.campaigns.find((statuses.length > 0 ? { ...range, status: { $in: statuses } } : range) as TenantFilter<CampaignDoc>, options),
  );
  return { items: page.docs.map(campaignView), nextCursor: page.nextCursor };
}
