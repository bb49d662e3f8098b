import type { RenderedMessage, Variables } from "@emailsvc/render";
import { AppError } from "@emailsvc/errors";
import type { PreviewJob } from "../domain/preview.js";
import { TEMPLATE_LIMITS } from "../domain/template.js";
import { committedVersion } from "./get-compiled-template.js";
import { loadTemplate, type Deps, type Scope } from "./deps.js";

/**
 * Renders the current version with the given variables, as a message would be
 * (no built-ins: a preview has no recipient), in the compile workers: one
 * tenant's preview never holds up another's calls. Missing variables are
 * listed. A version that cannot be rendered (stored before the limits of
 * @emailsvc/render) is a 400 naming them; variables that make the message too
 * large a 413.
 */
export async function previewTemplate(deps: Deps, scope: Scope, input: { id: string; variables: Variables | undefined }): Promise<RenderedMessage> {
  const variables = previewVariables(input.variables);
  const template = await loadTemplate(scope, input.id);
  const version = await committedVersion(scope, template, template.version);
  if (!version) throw new Error(`version ${template.version_id} of ${template._id} is missing`);
  return renderForPreview(deps, {
    key: `${template._id}:v${template.version}`,
    content: { subject: version.subject, html: version.html, variables: version.variables },
    variables,
  });
}

/** A preview's variables, at most TEMPLATE_LIMITS.variablesBytes as JSON (413 beyond). */
export function previewVariables(given: Variables | undefined): Variables {
  const variables = given ?? {};
  if (Buffer.byteLength(JSON.stringify(variables), "utf8") > TEMPLATE_LIMITS.variablesBytes) {
    throw new AppError("too_large", "variables_too_large", "variables are too large", {
      fieldViolations: [{ field: "variables", description: `at most ${TEMPLATE_LIMITS.variablesBytes / 1024} KiB as JSON` }],
    });
  }
  return variables;
}

/** Renders a preview job in the workers; its failures as the API's errors (413 over RENDER_LIMITS, 400 naming the problems). */
export async function renderForPreview(deps: Deps, job: PreviewJob): Promise<RenderedMessage> {
  const result = await deps.compiler.preview(job);
  if (result.ok) return result.message;
  if (result.kind === "limit") {
    throw new AppError("too_large", "render_too_large", result.message, { fieldViolations: [{ field: "variables", description: result.message }] });
  }
  const overLimits = result.problems.some((p) => p.limit !== undefined);
  throw new AppError(
    "invalid",
    overLimits ? "template_exceeds_limits" : "invalid_template",
    "this version of the template cannot be rendered; update the template",
    {
      fieldViolations: result.problems.map((p) => ({
        field: p.part === "subject" ? "subject" : "mjml_content",
        description: `${p.part === "html" ? "in the HTML MJML made of it: " : ""}${p.line > 0 ? `line ${p.line}: ` : ""}${p.message}`,
      })),
    },
  );
}
