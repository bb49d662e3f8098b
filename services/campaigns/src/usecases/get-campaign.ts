import type { CampaignView } from "../domain/campaign.js";
import { loadCampaign, type Scope } from "./deps.js";
import { campaignView } from "./views.js";

/** One campaign of the tenant with its live counts, or 404. */
export async function getCampaign(scope: Scope, id: string): Promise<CampaignView> {
  return campaignView(await loadCampaign(scope, id));
}
