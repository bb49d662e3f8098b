import type { AudienceFilter } from "@emailsvc/proto";
import { invalid } from "@emailsvc/errors";
import { notDraft, validateName, type CampaignView } from "../domain/campaign.js";
import type { CampaignDoc } from "../storage/documents.js";
import { storedFilter } from "./audience-filter.js";
import { checkReferences, loadCampaign, type Deps, type Scope } from "./deps.js";
import { campaignView } from "./views.js";

/** Changes a draft; the update is guarded by the state, so a send that won meanwhile is a 409 too. */
export async function updateCampaign(
  deps: Deps,
  scope: Scope,
  input: { id: string; name: unknown; templateId: string | undefined; tagFilter: AudienceFilter | undefined },
): Promise<CampaignView> {
  const current = await loadCampaign(scope, input.id);
  if (current.status !== "draft") throw notDraft(current.status, "changed");
  const set: Partial<CampaignDoc> = {};
  if (input.name !== undefined) set.name = validateName(input.name);
  if (input.templateId !== undefined) {
    if (!input.templateId) throw invalid("template_id must not be empty", [{ field: "template_id", description: "must not be empty" }]);
    set.template_id = input.templateId;
  }
  if (input.tagFilter !== undefined) set.tag_filter = storedFilter(input.tagFilter);
  await checkReferences(deps, scope, { templateId: input.templateId, filter: input.tagFilter });
  const doc = await scope.campaigns.updateOne({ _id: input.id, status: "draft" }, { $set: { ...set, updated_at: deps.now() } });
  if (!doc) throw notDraft((await loadCampaign(scope, input.id)).status, "changed");
  return campaignView(doc);
}
