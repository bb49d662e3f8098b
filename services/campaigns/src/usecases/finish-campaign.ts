import type { CampaignDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { published, statusUpdate } from "./campaign-status.js";
import type { Deps } from "./deps.js";

/**
 * Sending is over: every recipient has an outcome (the dispatcher recounted
 * the ledger first). The hand-over's position goes: it would name a
 * subscriber for as long as the campaign exists.
 */
export async function finishCampaign(deps: Deps, repos: TenantRepositories, campaign: CampaignDoc): Promise<CampaignDoc | null> {
  const now = deps.now();
  const doc = await repos.campaigns.updateOne({ _id: campaign._id, status: "sending" }, statusUpdate("sent", now, { finished_at: now, lease_until: 0, handed_up_to: "" }));
  return doc && published(deps, doc);
}
