import { invalid, notFound } from "@emailsvc/errors";
import { decodeCursor, encodeCursor, pageLimit } from "@emailsvc/ids";
import type { TemplateVersionDoc } from "../storage/documents.js";
import { committedVersion } from "./get-compiled-template.js";
import { loadTemplate, senderOf, type Page, type Scope } from "./deps.js";
import type { TemplateSender } from "../domain/template.js";

/** A committed version as the API shows it; `mjml` only when one version is read. */
export interface VersionView {
  version: number;
  subject: string;
  mjml: string;
  variables: string[];
  sender: TemplateSender;
  createdAt: number;
}

function versionView(doc: TemplateVersionDoc, withMjml: boolean): VersionView {
  return { version: doc.version, subject: doc.subject, mjml: withMjml ? doc.mjml : "", variables: doc.variables, sender: senderOf(doc), createdAt: doc.created_at };
}

/** Versions are large (MJML and its HTML): pages are smaller than other lists'. */
const VERSION_PAGE = { defaultLimit: 20, maxLimit: 100 } as const;

/**
 * A live template's committed versions, newest first: the template's pointer,
 * then each version's `prev` (the committed one before it), so a version a
 * lost race or a crash left behind is never listed. The cursor names the next
 * version's document and is bound to the template.
 */
export async function listTemplateVersions(scope: Scope, input: { id: string; limit: number; cursor: string }): Promise<Page<VersionView>> {
  const template = await loadTemplate(scope, input.id);
  const limit = pageLimit(input.limit, VERSION_PAGE);
  const filter = `versions:${template._id}`;
  let nextId = input.cursor ? decodeCursor(input.cursor, "tpv", filter) : template.version_id;
  const items: VersionView[] = [];
  while (nextId && items.length < limit) {
    const doc = await scope.versions.findOne({ _id: nextId, template_id: template._id });
    if (!doc) {
      if (items.length === 0 && input.cursor) throw invalid("cursor is invalid", [{ field: "cursor", description: "is not a next_cursor this list returned" }]);
      throw new Error(`version ${nextId} of ${template._id} is missing`);
    }
    items.push(versionView(doc, false));
    nextId = doc.prev;
  }
  return { items, nextCursor: nextId ? encodeCursor(nextId, filter) : "" };
}

/** One committed version of a live template, with its MJML; 404 for a number it never had. */
export async function getTemplateVersion(scope: Scope, input: { id: string; version: number }): Promise<VersionView> {
  const template = await loadTemplate(scope, input.id);
  const wanted = input.version;
  const doc = Number.isInteger(wanted) && wanted >= 1 && wanted <= template.version ? await committedVersion(scope, template, wanted) : null;
  if (!doc) throw notFound("template version");
  return versionView(doc, true);
}
