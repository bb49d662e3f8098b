import { createHash } from "node:crypto";
import type { RenderedMessage, Variables } from "@emailsvc/render";
import { validateMjmlSize, validateSubject } from "../domain/template.js";
import { checkSubject, compileBody, mergeNames } from "./content.js";
import type { Deps } from "./deps.js";
import { previewVariables, renderForPreview } from "./preview-template.js";

/**
 * Renders content that is not stored (the dashboard's editor, as its member
 * types): the checks and the compile of create, so the same MJML problems
 * come back with their lines, then the render of a preview. Nothing is
 * written. The workers cache a compiled renderer by key: the content's hash,
 * so typing the same text again (undo) is not compiled twice, and equal text
 * of two tenants is the same renderer.
 */
export async function previewDraft(
  deps: Deps,
  input: { subject: unknown; mjml: unknown; variables: Variables | undefined },
): Promise<RenderedMessage & { variables: string[] }> {
  const subject = validateSubject(input.subject);
  const mjml = validateMjmlSize(input.mjml);
  const variables = previewVariables(input.variables);
  const subjectVariables = checkSubject(subject);
  const body = await compileBody(deps.compiler, mjml);
  const used = mergeNames(subjectVariables, body.variables);
  const key = `draft:${createHash("sha256").update(subject).update("\0").update(body.html).digest("base64url")}`;
  const message = await renderForPreview(deps, { key, content: { subject, html: body.html, variables: used }, variables });
  return { ...message, variables: used };
}
