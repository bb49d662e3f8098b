import type { CampaignDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { published, statusUpdate } from "./campaign-status.js";
import { campaignCall, type Deps } from "./deps.js";
import { startSending } from "./send-campaign.js";

/** A scheduled campaign that is due: started, or failed when it is overdue by more than the allowed age. */
export async function startDueCampaign(deps: Deps, repos: TenantRepositories, campaign: CampaignDoc): Promise<CampaignDoc | null> {
  const now = deps.now();
  const fail = async (reason: string) => {
    const doc = await repos.campaigns.updateOne({ _id: campaign._id, status: "scheduled" }, statusUpdate("failed", now, { failure_reason: reason, finished_at: now }));
    if (doc) await published(deps, doc);
    return null;
  };
  const maxAge = deps.settings?.scheduleMaxAgeMs ?? 3_600_000;
  const overdue = now - (campaign.send_at ?? now);
  if (overdue > maxAge) {
    deps.logger.warn({ campaign_id: campaign._id, overdue_ms: overdue }, "scheduled campaign missed its time by more than the allowed age; failed");
    return fail("schedule_missed");
  }
  const version = await deps.templates.currentVersion(campaignCall(campaign), campaign.template_id);
  if (version === undefined) return fail("template_not_found");
  return startSending(deps, repos, campaign, version, "scheduled");
}
