import { invalid, notFound } from "@emailsvc/errors";
import type { CompiledView } from "../domain/template.js";
import { senderOf } from "./deps.js";
import type { TemplateDoc, TemplateVersionDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";

export interface CompiledQuery {
  id?: string | undefined;
  slug?: string | undefined;
  /** 0: the current version. */
  version: number;
}

/**
 * A compiled version, for delivery. By slug: live templates only. By id: also
 * a deleted template, but only with an explicit version, so that mail queued
 * before the delete still renders and nothing new starts from it.
 */
export async function getCompiledTemplate(scope: Scope, query: CompiledQuery): Promise<CompiledView> {
  if (!Number.isInteger(query.version) || query.version < 0) {
    throw invalid("version is invalid", [{ field: "version", description: "0 (current) or a version number" }]);
  }
  let template: TemplateDoc | null;
  if (query.id) template = await scope.templates.findOne({ _id: query.id });
  else if (query.slug) template = await scope.templates.findOne({ slug_key: query.slug, deleted: false });
  else throw invalid("id or slug is required", [{ field: "template", description: "give id or slug" }]);
  if (!template || (template.deleted && query.version === 0)) throw notFound("template");

  const wanted = query.version === 0 ? template.version : query.version;
  const version = wanted > template.version ? null : await committedVersion(scope, template, wanted);
  if (!version) throw notFound("template version");
  return {
    templateId: template._id,
    slug: template.slug,
    version: version.version,
    category: template.category,
    ignoreSuppressions: template.ignore_suppressions ?? [],
    subject: version.subject,
    html: version.html,
    variables: version.variables,
    sender: senderOf(version),
  };
}

/**
 * The version document that was committed as `version`. The current one is
 * the template's pointer. Older ones: usually the only document with that
 * number; when a writer lost a race or crashed there may be more, and then the
 * committed one is the `prev` of any document one number later (every writer of
 * version n+1 read the pointer while it named the committed version n).
 */
export async function committedVersion(scope: Scope, template: TemplateDoc, version: number): Promise<TemplateVersionDoc | null> {
  if (version === template.version) return scope.versions.findOne({ _id: template.version_id });
  const candidates = await scope.versions.find({ template_id: template._id, version }, { limit: 2 });
  if (candidates.length <= 1) return candidates[0] ?? null;
  const next = await scope.versions.findOne({ template_id: template._id, version: version + 1 });
  return next ? scope.versions.findOne({ _id: next.prev }) : null;
}
