import type { CallContext, Logger } from "@emailsvc/runtime";
import { notFound, tenantKey } from "@emailsvc/runtime";
import type { Collection } from "@emailsvc/storage";
import type { BodyCompiler } from "../compile-pool.js";
import type { TemplateView } from "../domain/template.js";
import type { TemplateDoc, TemplateVersionDoc } from "../storage/documents.js";
import { TenantCollection } from "@emailsvc/storage";

/** What every use case needs; built once in server.ts. */
export interface Deps {
  templates: Collection<TemplateDoc>;
  versions: Collection<TemplateVersionDoc>;
  /** Checks and compiles new bodies, and renders previews (worker threads in production). */
  compiler: BodyCompiler;
  logger: Logger;
  now: () => number;
}

/** The collections of one tenant, for one call. */
export interface Scope {
  call: CallContext;
  templates: TenantCollection<TemplateDoc>;
  versions: TenantCollection<TemplateVersionDoc>;
}

export function scopeOf(deps: Deps, call: CallContext): Scope {
  const tenant = tenantKey(call.tenant);
  return {
    call,
    templates: new TenantCollection(deps.templates, tenant),
    versions: new TenantCollection(deps.versions, tenant),
  };
}

/** A live (not deleted) template of the tenant, or 404. */
export async function loadTemplate(scope: Scope, id: string): Promise<TemplateDoc> {
  const doc = id ? await scope.templates.findOne({ _id: id, deleted: false }) : null;
  if (!doc) throw notFound("template");
  return doc;
}

export function templateView(doc: TemplateDoc): TemplateView {
  return {
    id: doc._id,
    slug: doc.slug,
    name: doc.name,
    subject: doc.subject,
    mjml: doc.mjml,
    category: doc.category,
    version: doc.version,
    variables: doc.variables,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}
