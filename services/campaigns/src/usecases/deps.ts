import { create } from "@bufbuild/protobuf";
import { AudienceFilterSchema, type AudienceFilter } from "@emailsvc/proto";
import { tenantKey, type CallContext, type Logger } from "@emailsvc/runtime";
import { templateNotFound, type CampaignView } from "../domain/campaign.js";
import type { AudienceSource, TemplateDirectory } from "../rpc/clients.js";
import type { CampaignDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

/** What every use case needs besides its tenant's collections; built once in server.ts. No collection here. */
export interface Deps {
  audiences: AudienceSource;
  templates: TemplateDirectory;
  logger: Logger;
  now: () => number;
}

/** One call: its context and its tenant's collections. */
export interface Scope extends TenantRepositories {
  call: CallContext;
}

export function scopeOf(forTenant: (tenant: string) => TenantRepositories, call: CallContext): Scope {
  return { call, ...forTenant(tenantKey(call.tenant)) };
}

export function campaignView(doc: CampaignDoc): CampaignView {
  return {
    id: doc._id,
    name: doc.name,
    templateId: doc.template_id,
    tagFilter: doc.tag_filter,
    status: doc.status,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}

/**
 * Checks what a campaign or trigger names before it is stored: a template must
 * be a live template of the tenant (404 `template_not_found`); a filter, or a
 * tag (as the filter of its holders), must be one the subscribers service can
 * evaluate (its unknown tags are a 400 naming them). Parts not given are not checked.
 */
export async function checkReferences(
  deps: Deps,
  scope: Scope,
  refs: { templateId?: string | undefined; filter?: AudienceFilter | undefined; tag?: string },
): Promise<void> {
  const filter = refs.filter ?? (refs.tag ? create(AudienceFilterSchema, { includeTags: [refs.tag] }) : undefined);
  await Promise.all([
    refs.templateId === undefined
      ? undefined
      : deps.templates.exists(scope.call, refs.templateId).then((found) => {
          if (!found) throw templateNotFound();
        }),
    filter === undefined ? undefined : deps.audiences.count(scope.call, filter),
  ]);
}
