import type { Logger } from "@emailsvc/telemetry";
import type { CallContext } from "@emailsvc/tenancy";
import { notFound } from "@emailsvc/errors";
import { tenantKey } from "@emailsvc/tenancy";
import type { TemplateSender, TemplateView } from "../domain/template.js";
import type { TemplateDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import type { BodyCompiler, TemplateUsers } from "./ports.js";

/** What every use case needs besides its tenant's collections; built once in server.ts. No collection here. */
export interface Deps {
  /** Checks and compiles new bodies, and renders previews (worker threads in production). */
  compiler: BodyCompiler;
  /** Who uses a template, asked before it is deleted; unset when the campaigns service is not configured. */
  users?: TemplateUsers | undefined;
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

/** A page of a list, oldest first. */
export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** A live (not deleted) template of the tenant, or 404. */
export async function loadTemplate(scope: Pick<TenantRepositories, "templates">, id: string): Promise<TemplateDoc> {
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
    ignoreSuppressions: doc.ignore_suppressions ?? [],
    version: doc.version,
    variables: doc.variables,
    sender: senderOf(doc),
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}

/** The sender a template or version document holds ("" for each field it lacks). */
export function senderOf(doc: { from_email?: string; from_name?: string; reply_to?: string }): TemplateSender {
  return { fromEmail: doc.from_email ?? "", fromName: doc.from_name ?? "", replyTo: doc.reply_to ?? "" };
}

/** The document fields of a sender. */
export function senderFields(sender: TemplateSender): { from_email: string; from_name: string; reply_to: string } {
  return { from_email: sender.fromEmail, from_name: sender.fromName, reply_to: sender.replyTo };
}
