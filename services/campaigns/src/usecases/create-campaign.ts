import type { AudienceFilter } from "@emailsvc/proto";
import { newOutbox } from "@emailsvc/outbox";
import { invalid } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { validateName, type CampaignView } from "../domain/campaign.js";
import type { CampaignOutboxEntry } from "../storage/documents.js";
import { requireFilter, storedFilter } from "./audience-filter.js";
import { checkReferences, type Deps, type Scope } from "./deps.js";
import { campaignView } from "./views.js";

/** A new draft: a name, a live template of the tenant, and an audience filter the subscribers service can evaluate. */
export async function createCampaign(
  deps: Deps,
  scope: Scope,
  input: { name: unknown; templateId: string; tagFilter: AudienceFilter | undefined },
): Promise<CampaignView> {
  const name = validateName(input.name);
  const filter = requireFilter(input.tagFilter);
  if (!input.templateId) throw invalid("template_id is required", [{ field: "template_id", description: "is required" }]);
  await checkReferences(deps, scope, { templateId: input.templateId, filter });
  const now = deps.now();
  const doc = {
    _id: newId("cmp"),
    name,
    template_id: input.templateId,
    tag_filter: storedFilter(filter),
    status: "draft" as const,
    created_at: now,
    updated_at: now,
    ...newOutbox<CampaignOutboxEntry>([]),
  };
  await scope.campaigns.insertOne(doc);
  return campaignView({ ...doc, tenant: scope.campaigns.tenant });
}
