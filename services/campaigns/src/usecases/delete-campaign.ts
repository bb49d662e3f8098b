import { notDraft } from "../domain/campaign.js";
import { loadCampaign, type Scope } from "./deps.js";

/** Deletes a draft (guarded by the state: anything else is a 409 naming it). */
export async function deleteCampaign(scope: Scope, id: string): Promise<void> {
  const current = await loadCampaign(scope, id);
  if (current.status !== "draft") throw notDraft(current.status, "deleted");
  if (!(await scope.campaigns.deleteOne({ _id: id, status: "draft" }))) {
    throw notDraft((await loadCampaign(scope, id)).status, "deleted");
  }
}
