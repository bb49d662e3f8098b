import { pageById } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import type { CampaignView } from "../domain/campaign.js";
import type { CampaignDoc } from "../storage/documents.js";
import type { Page, Scope } from "./deps.js";
import { campaignView } from "./views.js";

/** The tenant's campaigns, oldest first, a page at a time. */
export async function listCampaigns(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<CampaignView>> {
  const page = await pageById(input, { idPrefix: "cmp" }, ({ range, options }) => scope.campaigns.find(range as TenantFilter<CampaignDoc>, options));
  return { items: page.docs.map(campaignView), nextCursor: page.nextCursor };
}
