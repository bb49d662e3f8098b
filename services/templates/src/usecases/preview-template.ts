import { AppError } from "@emailsvc/runtime";
import { RenderLimitError, type RenderedMessage, type Variables } from "../domain/render.js";
import { TEMPLATE_LIMITS } from "../domain/template.js";
import { committedVersion } from "./read-templates.js";
import { loadTemplate, type Deps, type Scope } from "./deps.js";

/**
 * Renders the current version with the given variables, as a message would be
 * (no built-ins: a preview has no recipient). Missing variables are listed.
 */
export async function previewTemplate(deps: Deps, scope: Scope, input: { id: string; variables: Variables | undefined }): Promise<RenderedMessage> {
  const variables = input.variables ?? {};
  if (Buffer.byteLength(JSON.stringify(variables), "utf8") > TEMPLATE_LIMITS.variablesBytes) {
    throw new AppError("too_large", "variables_too_large", "variables are too large", {
      fieldViolations: [{ field: "variables", description: `at most ${TEMPLATE_LIMITS.variablesBytes / 1024} KiB as JSON` }],
    });
  }
  const template = await loadTemplate(scope, input.id);
  const key = `${template._id}:v${template.version}`;
  let renderer = deps.renderers.get(key);
  if (!renderer) {
    const version = await committedVersion(scope, template, template.version);
    if (!version) throw new Error(`version ${template.version_id} of ${template._id} is missing`);
    renderer = deps.renderers.getOrCompile(key, { subject: version.subject, html: version.html, variables: version.variables });
  }
  try {
    return renderer(variables);
  } catch (err) {
    if (err instanceof RenderLimitError) {
      throw new AppError("too_large", "render_too_large", err.message, {
        fieldViolations: [{ field: "variables", description: err.message }],
      });
    }
    throw err;
  }
}
