import { RENDER_LIMITS, TEMPLATE_LIMITS } from "@emailsvc/render";
import type { FromSchema } from "json-schema-to-ts";
import { bodyErrors, body, errors, json, lineText, noContent, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { emailAddress } from "../../openapi/common.js";

// Templates' part of the OpenAPI document; body types are derived from the schemas.

/** Longest `mjml_content`, in characters (JSON Schema `maxLength`). */
export const MJML_MAX_LENGTH = 512 * 1024;

/**
 * Largest body of template create and update, the only routes above the
 * default: `mjml_content` may hold 512 Ki characters, and JSON escaping
 * (quotes and newlines of the markup) and multi-byte UTF-8 make its body
 * bigger than that in bytes. Twice the content limit leaves room for both.
 */
export const TEMPLATE_BODY_LIMIT_BYTES = 1024 * 1024;

/** A slug as the templates service makes and takes them (domain/template.ts). */
export const slug = {
  type: "string",
  minLength: 1,
  maxLength: 100,
  pattern: "^[a-z0-9]+(?:-[a-z0-9]+)*$",
  "x-pattern-message": "is 1-100 lower-case letters, digits and single dashes, e.g. welcome-email",
} as const;

const templateName = lineText(200, "is 1-200 characters, not blank, without control characters");
const subject = {
  ...lineText(998, "is 1-998 characters on one line, not blank, without control characters"),
  description:
    "1-998 characters on one line (RFC 5322's line limit), not blank, without control characters; may contain `{{variable_name}}` and Handlebars helpers, which must be well-formed (400 `invalid_template` otherwise).",
} as const;
const mjmlContent = {
  type: "string",
  minLength: 1,
  maxLength: MJML_MAX_LENGTH,
  // Not blank: at least one character String#trim keeps.
  pattern: "[^\\u0009-\\u000d\\u0020\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]",
  "x-pattern-message": "is blank",
} as const;

export const TEMPLATE_CATEGORIES = ["transactional", "marketing"] as const;

const category = {
  type: "string",
  enum: TEMPLATE_CATEGORIES,
  description: "`marketing` mail carries `List-Unsubscribe` headers; `transactional` mail is what a user's action causes.",
} as const;

const ignoreSuppressions = {
  type: "array",
  items: { type: "string", enum: ["hard_bounce", "complaint"] },
  maxItems: 2,
  uniqueItems: true,
  description:
    "Transactional templates only: the suppression-list reasons its mail is sent despite. By default transactional mail is not sent to an address that hard-bounced or complained (it is `suppressed` with `recipient_bounced` / `recipient_complained`); a template whose mail the person must get (a password reset they asked for) may list `hard_bounce` and/or `complaint`. Marketing mail never ignores the list (a 400).",
} as const;

/** Values of a template's placeholders; also the `variables` of a send (emails). */
export const variables = {
  type: "object",
  additionalProperties: true,
  description:
    "Values of the template's `{{variable_name}}` placeholders: names to JSON values (objects for `{{a.b}}`). Values are HTML-escaped in the body. Their total size is limited by the service (413).",
  examples: [{ first_name: "Ada", order: { id: "A-1001", total: "CHF 49.00" } }],
} as const;

export const TemplateCreate = {
  type: "object",
  additionalProperties: false,
  required: ["name", "subject", "mjml_content", "category"],
  properties: {
    name: templateName,
    subject,
    mjml_content: {
      ...mjmlContent,
      description: `MJML markup, at most 512 KiB as UTF-8 (413 \`mjml_too_large\` beyond; more than ${MJML_MAX_LENGTH} characters is refused with 400 before that). Validated strictly: markup that does not compile is a 400 (\`invalid_mjml\`) whose \`errors\` name the line and the problem.`,
    },
    category,
    ignore_suppressions: { ...ignoreSuppressions, default: [] },
    slug: {
      ...slug,
      description:
        "1-100 lower-case letters, digits and single dashes; unique per account and mode; used as `template_slug` when sending. Derived from the name when left out.",
    },
    from_email: { ...emailAddress, description: `Optional From address of mail sent with this template (a send's own \`from\` wins; left out: the platform's \`EMAIL_FROM\`). Live mail From an address whose domain is not a verified sending domain of the account is refused at send (422 \`from_domain_not_verified\`), and a campaign's email fails with that reason. ${emailAddress.description}` },
    from_name: { ...lineText(100, "must show something and hold no control characters or line breaks"), description: "Optional From display name (1-100 characters)." },
    reply_to: { ...emailAddress, description: "Optional Reply-To address (a send's own `reply_to` wins)." },
  },
} as const;
export type TemplateCreateBody = FromSchema<typeof TemplateCreate>;

export const TemplateUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description:
    "Any of the fields; fields left out keep their value. The slug cannot change. A change of `subject`, `mjml_content` or the sender (`from_email`, `from_name`, `reply_to`) makes a new version.",
  properties: {
    name: templateName,
    subject,
    mjml_content: { ...mjmlContent, description: "As on create." },
    category,
    from_email: { ...emailAddress, type: ["string", "null"], description: "As on create; null removes it. A change of the sender makes a new version." },
    from_name: { ...lineText(100, "must show something and hold no control characters or line breaks"), type: ["string", "null"], description: "As on create; null removes it." },
    reply_to: { ...emailAddress, type: ["string", "null"], description: "As on create; null removes it." },
    ignore_suppressions: { ...ignoreSuppressions, description: `${ignoreSuppressions.description} \`[]\` removes them.` },
  },
} as const;
export type TemplateUpdateBody = FromSchema<typeof TemplateUpdate>;

export const TemplateDraftPreviewRequest = {
  type: "object",
  additionalProperties: false,
  required: ["subject", "mjml_content"],
  properties: {
    subject,
    mjml_content: { ...mjmlContent, description: "MJML markup, checked as on create (400 `invalid_mjml` naming the lines)." },
    variables: { ...variables, description: "Values to fill in; default none." },
  },
} as const;
export type TemplateDraftPreviewBody = FromSchema<typeof TemplateDraftPreviewRequest>;

export const TemplatePreviewRequest = {
  type: "object",
  additionalProperties: false,
  properties: { variables: { ...variables, description: "Values to fill in; default none." } },
} as const;
export type TemplatePreviewBody = FromSchema<typeof TemplatePreviewRequest>;

function templateSummaryProperties(): Record<string, JsonSchema> {
  return {
    id: { type: "string", readOnly: true, examples: ["tpl_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
    slug: { type: "string", description: "Unique per account and mode; send with it as `template_slug`.", examples: ["welcome"] },
    name: { type: "string" },
    subject: { type: "string", description: "May contain `{{variable_name}}`." },
    category: ref("TemplateCategory"),
    ignore_suppressions: { ...ignoreSuppressions, readOnly: false },
    version: {
      type: "integer",
      minimum: 1,
      readOnly: true,
      description: "1 on create, +1 on every update that changes the subject or the MJML.",
    },
    variables: {
      type: "array",
      items: { type: "string" },
      readOnly: true,
      description: "Every `{{variable}}` the subject and the body use, sorted.",
    },
    created_at: timestamp("When the template was created (RFC 3339, UTC)."),
    updated_at: timestamp("When the template last changed (RFC 3339, UTC)."),
  };
}

function versionProperties(): Record<string, JsonSchema> {
  return {
    version: { type: "integer", minimum: 1 },
    subject: { type: "string" },
    variables: { type: "array", items: { type: "string" }, description: "Every `{{variable}}` the version's subject and body use, sorted." },
    from_email: { type: ["string", "null"], description: "The version's From address; null: none." },
    from_name: { type: ["string", "null"], description: "The version's From display name; null: none." },
    reply_to: { type: ["string", "null"], description: "The version's Reply-To; null: none." },
    created_at: timestamp("When the version was made (RFC 3339, UTC)."),
  };
}

const VERSION_FIELDS = ["version", "subject", "variables", "from_email", "from_name", "reply_to", "created_at"];

export const schemas: Record<string, JsonSchema> = {
  TemplateCategory: category,
  TemplateDraftPreviewRequest,
  TemplateDraftPreview: {
    type: "object",
    additionalProperties: false,
    required: ["html", "subject", "text", "missing_variables", "variables"],
    properties: {
      html: { type: "string", description: "The rendered HTML body." },
      subject: { type: "string", description: "The rendered subject." },
      text: { type: "string", description: "The plain-text part derived from the HTML." },
      missing_variables: { type: "array", items: { type: "string" }, description: "Variables the content uses that the call did not give; rendered empty." },
      variables: { type: "array", items: { type: "string" }, description: "Every `{{variable}}` the subject and the body use, sorted (as a template's `variables`)." },
    },
  },
  TemplateVersionSummary: {
    type: "object",
    additionalProperties: false,
    description: "A committed version without its MJML (lists).",
    required: VERSION_FIELDS,
    properties: versionProperties(),
  },
  TemplateVersion: {
    type: "object",
    additionalProperties: false,
    description: "A committed version as it was written, with its MJML.",
    required: [...VERSION_FIELDS, "mjml_content"],
    properties: { ...versionProperties(), mjml_content: { type: "string" } },
  },
  TemplateVersionPage: page("TemplateVersionSummary", "A page of a template's versions, newest first."),
  Template: {
    type: "object",
    additionalProperties: false,
    required: ["id", "slug", "name", "subject", "mjml_content", "category", "ignore_suppressions", "version", "variables", "from_email", "from_name", "reply_to", "created_at", "updated_at"],
    properties: {
      ...templateSummaryProperties(),
      mjml_content: { type: "string", description: "The MJML markup; may contain `{{variable_name}}`." },
      from_email: { type: ["string", "null"], description: "The template's From address; null: `EMAIL_FROM`'s." },
      from_name: { type: ["string", "null"], description: "The template's From display name; null: none (or `EMAIL_FROM`'s, without a `from_email`)." },
      reply_to: { type: ["string", "null"], description: "The template's Reply-To; null: none." },
    },
  },
  TemplateSummary: {
    type: "object",
    additionalProperties: false,
    description: "A template without its MJML (lists); read one template for its `mjml_content`.",
    required: ["id", "slug", "name", "subject", "category", "ignore_suppressions", "version", "variables", "created_at", "updated_at"],
    properties: templateSummaryProperties(),
  },
  TemplateCreate,
  TemplateUpdate,
  TemplatePage: page("TemplateSummary", "A page of templates, without their MJML."),
  Variables: variables,
  TemplatePreviewRequest,
  TemplatePreview: {
    type: "object",
    additionalProperties: false,
    required: ["html", "subject", "text", "missing_variables"],
    properties: {
      html: { type: "string", description: "The rendered HTML body." },
      subject: { type: "string", description: "The rendered subject." },
      text: { type: "string", description: "The plain-text part derived from the HTML." },
      missing_variables: {
        type: "array",
        items: { type: "string" },
        description: "Variables the template uses that the call did not give; they were rendered empty.",
      },
    },
  },
};

/** What a version may contain (@emailsvc/render), as create and update enforce it. */
const LIMITS_TEXT = `A version may nest blocks (\`{{#if}}\`, \`{{#each}}\`, \`{{#unless}}\`, a chained \`{{else if}}\`) at most ${TEMPLATE_LIMITS.blockDepth} deep, hold at most ${TEMPLATE_LIMITS.expressions.toLocaleString("en")} \`{{…}}\` expressions in the subject and as many in the body, nest elements at most ${TEMPLATE_LIMITS.markupDepth} deep, and compile to at most ${TEMPLATE_LIMITS.htmlChars / 1024} Ki characters of HTML; beyond any of these it is a 400 \`template_exceeds_limits\` whose \`errors\` name the field, the line and the limit.`;

export const parameters: Record<string, ParameterObject> = {
  TemplateId: pathParam("id", "The template's id."),
  TemplateVersionLimit: { name: "limit", in: "query", description: "Page size (versions are large: at most 100).", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
  TemplateVersionNumber: { name: "version", in: "path", required: true, description: "The version's number (1 is the first).", schema: { type: "string", pattern: "^[1-9][0-9]{0,8}$", "x-pattern-message": "is a version number, 1 or more" } },
};

export const paths: Paths = {
  "/api/v1/templates": {
    post: {
      operationId: "createTemplate",
      summary: "Create a template",
      description: [
        "Stores an MJML template as version 1. The MJML is validated strictly and compiled once per version: markup that does not compile is a 400 whose `errors` name the line and the problem.",
        LIMITS_TEXT,
        "`{{variable_name}}` in the subject and the body are filled per message (HTML-escaped in the body); `variables` lists the ones the template uses.",
        `The body may be up to ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB here (\`mjml_content\` at most ${MJML_MAX_LENGTH} characters).`,
      ].join("\n\n"),
      tags: ["Templates"],
      requestBody: body("TemplateCreate"),
      responses: {
        "201": json(ref("Template"), "The new template, with its `id` and `slug`."),
        ...errors(...bodyErrors, "Conflict", ...serviceErrors),
      },
    },
    get: {
      operationId: "listTemplates",
      summary: "List templates",
      description: "Items leave out `mjml_content`; read one template for it.",
      tags: ["Templates"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("TemplatePage"), "A page of templates."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/templates/{id}": {
    get: {
      operationId: "getTemplate",
      summary: "Get a template",
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      responses: { "200": json(ref("Template"), "The template, at its current version."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateTemplate",
      summary: "Update a template",
      description: [
        "Changes any of name, subject, mjml_content, category and ignore_suppressions; the slug cannot change. Two updates at once: one of them may get a 409 `concurrent_update`; retry it.",
        "A change of the subject or the MJML makes a new version (`version` + 1); emails queued before keep the version they were queued with.",
        LIMITS_TEXT,
        `The body may be up to ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB here.`,
      ].join("\n\n"),
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      requestBody: body("TemplateUpdate"),
      responses: {
        "200": json(ref("Template"), "The updated template."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteTemplate",
      summary: "Delete a template",
      description:
        "It can no longer be read, previewed or sent (mail already queued with it still goes out). A template in use is not deleted: while a trigger names it (active or not), or a campaign may still send it (draft, scheduled, sending, paused), the answer is a 409 `template_in_use` whose detail names them (the first 20, and how many more); delete them or give them another template first. Finished campaigns do not count.",
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/templates/preview": {
    post: {
      operationId: "previewTemplateDraft",
      summary: "Render unsaved content without storing it",
      description: [
        "Checks and renders a subject and MJML that are not stored (an editor's live preview): the checks of create, so MJML that does not compile is a 400 `invalid_mjml` whose `errors` name the line and the problem, then the render of POST /api/v1/templates/{id}/preview with the given variables, and the variables the content uses. Nothing is stored or sent.",
        LIMITS_TEXT,
        `The body may be up to ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB here.`,
      ].join("\n\n"),
      tags: ["Templates"],
      requestBody: body("TemplateDraftPreviewRequest"),
      responses: {
        "200": json(ref("TemplateDraftPreview"), "The rendered message."),
        ...errors(...bodyErrors, ...serviceErrors),
      },
    },
  },
  "/api/v1/templates/{id}/versions": {
    get: {
      operationId: "listTemplateVersions",
      summary: "List a template's versions",
      description: "Newest first: the current version, then each committed one before it (every version is kept, since mail queued with one is sent with it). Items leave out the MJML; read one version for it. Pages of 20 by default, at most 100.",
      tags: ["Templates"],
      parameters: [param("TemplateId"), param("TemplateVersionLimit"), param("Cursor")],
      responses: { "200": json(ref("TemplateVersionPage"), "A page of versions."), ...errors("BadRequest", "NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/templates/{id}/versions/{version}": {
    get: {
      operationId: "getTemplateVersion",
      summary: "Get one version of a template",
      description: "The version as it was written, with its MJML (read-only: a version never changes). 404 for a number the template never had.",
      tags: ["Templates"],
      parameters: [param("TemplateId"), param("TemplateVersionNumber")],
      responses: { "200": json(ref("TemplateVersion"), "The version."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/templates/{id}/preview": {
    post: {
      operationId: "previewTemplate",
      summary: "Render a template without sending it",
      description:
        `Renders the current version with the given variables: the HTML, the subject and the plain-text part. Variables the template uses but the call did not give are listed in \`missing_variables\` (and rendered empty), not silently blank. Nothing is sent.\n\nOne message may take at most ${RENDER_LIMITS.eachIterations.toLocaleString("en")} \`{{#each}}\` iterations, ${RENDER_LIMITS.evaluations.toLocaleString("en")} evaluations and ${RENDER_LIMITS.outputChars / 1024} Ki characters of output, nested ${RENDER_LIMITS.markupDepth} elements deep: variables that would make it larger get a 413 \`render_too_large\`. A template stored before the limits of create and update that exceeds them is a 400 \`template_exceeds_limits\`.`,
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      requestBody: body("TemplatePreviewRequest"),
      responses: {
        "200": json(ref("TemplatePreview"), "The rendered message."),
        ...errors(...bodyErrors, "NotFound", ...serviceErrors),
      },
    },
  },
};
