import { tenantKey, type CallContext, type Logger } from "@emailsvc/runtime";
import type { CampaignView } from "../domain/campaign.js";
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
