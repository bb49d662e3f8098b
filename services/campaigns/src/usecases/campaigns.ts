import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { AudienceFilterSchema, type AudienceFilter } from "@emailsvc/proto";
import { invalid, newId, notFound, pageById } from "@emailsvc/runtime";
import type { TenantFilter } from "@emailsvc/storage";
import { notDraft, validateName, type CampaignView } from "../domain/campaign.js";
import { newOutbox } from "@emailsvc/outbox";
import type { CampaignDoc, CampaignOutboxEntry } from "../storage/documents.js";
import { campaignView, checkReferences, type Deps, type Scope } from "./deps.js";

// Drafts: create, read, list, change, delete; and the size of an audience.

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** The filter as stored: protobuf JSON with the .proto's field names, defaults left out. */
function storedFilter(filter: AudienceFilter): Record<string, unknown> {
  return toJson(AudienceFilterSchema, filter, { useProtoFieldName: true }) as Record<string, unknown>;
}

/** The stored filter as AudienceService takes it. */
export function filterOf(doc: CampaignDoc): AudienceFilter {
  return fromJson(AudienceFilterSchema, doc.tag_filter as JsonValue);
}

function requireFilter(filter: AudienceFilter | undefined): AudienceFilter {
  if (!filter) throw invalid("tag_filter is required", [{ field: "tag_filter", description: "is required" }]);
  return filter;
}

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

async function load(scope: Scope, id: string): Promise<CampaignDoc> {
  const doc = id ? await scope.campaigns.findOne({ _id: id }) : null;
  if (!doc) throw notFound("campaign");
  return doc;
}

export async function getCampaign(scope: Scope, id: string): Promise<CampaignView> {
  return campaignView(await load(scope, id));
}

export async function listCampaigns(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<CampaignView>> {
  const page = await pageById(input, { idPrefix: "cmp" }, ({ range, options }) =>
    scope.campaigns.find(range as TenantFilter<CampaignDoc>, options),
  );
  return { items: page.docs.map(campaignView), nextCursor: page.nextCursor };
}

/** Changes a draft; the update is guarded by the state, so a send that won meanwhile is a 409 too. */
export async function updateCampaign(
  deps: Deps,
  scope: Scope,
  input: { id: string; name: unknown; templateId: string | undefined; tagFilter: AudienceFilter | undefined },
): Promise<CampaignView> {
  const current = await load(scope, input.id);
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
  if (!doc) {
    const now = await load(scope, input.id);
    throw notDraft(now.status, "changed");
  }
  return campaignView(doc);
}

export async function deleteCampaign(scope: Scope, id: string): Promise<void> {
  const current = await load(scope, id);
  if (current.status !== "draft") throw notDraft(current.status, "deleted");
  if (!(await scope.campaigns.deleteOne({ _id: id, status: "draft" }))) {
    throw notDraft((await load(scope, id)).status, "deleted");
  }
}

/** Active subscribers a stored campaign's filter, or a filter given, reaches now. */
export async function countRecipients(
  deps: Deps,
  scope: Scope,
  target: { campaignId: string } | { tagFilter: AudienceFilter | undefined },
): Promise<number> {
  const filter = "campaignId" in target ? filterOf(await load(scope, target.campaignId)) : requireFilter(target.tagFilter);
  return deps.audiences.count(scope.call, filter);
}
