import { templates } from "@emailsvc/proto";
import { rfc3339 } from "../../routes/json.js";

// Proto templates <-> the REST API's JSON. The rules live in the templates service.

export interface TemplateSummaryJson {
  id: string;
  slug: string;
  name: string;
  subject: string;
  category: string;
  ignore_suppressions: string[];
  version: number;
  variables: string[];
  created_at: string;
  updated_at: string;
}

export interface TemplateJson extends TemplateSummaryJson {
  mjml_content: string;
  from_email: string | null;
  from_name: string | null;
  reply_to: string | null;
}

export interface TemplatePreviewJson {
  html: string;
  subject: string;
  text: string;
  missing_variables: string[];
}

const CATEGORY_TO_JSON: Partial<Record<templates.TemplateCategory, string>> = {
  [templates.TemplateCategory.TRANSACTIONAL]: "transactional",
  [templates.TemplateCategory.MARKETING]: "marketing",
};

const CATEGORY_FROM_JSON: Record<string, templates.TemplateCategory> = {
  transactional: templates.TemplateCategory.TRANSACTIONAL,
  marketing: templates.TemplateCategory.MARKETING,
};

/** `undefined` (not given) -> UNSPECIFIED, which the service reads as "no change". */
export function categoryFromJson(value: unknown): templates.TemplateCategory {
  if (value === undefined) return templates.TemplateCategory.UNSPECIFIED;
  const category = CATEGORY_FROM_JSON[String(value)];
  // Bodies are validated against the same enum before this runs.
  if (category === undefined) throw new Error(`unknown template category ${String(value)}`);
  return category;
}

function categoryToJson(category: templates.TemplateCategory): string {
  const value = CATEGORY_TO_JSON[category];
  if (value === undefined) throw new Error(`the service returned template category ${category}`);
  return value;
}

/** A template without its MJML, as lists show it. */
export function templateSummaryJson(t: templates.Template): TemplateSummaryJson {
  return {
    id: t.id,
    slug: t.slug,
    name: t.name,
    subject: t.subject,
    category: categoryToJson(t.category),
    ignore_suppressions: t.ignoreSuppressions,
    version: t.version,
    variables: t.variables,
    created_at: rfc3339(t.createdAt, "created_at"),
    updated_at: rfc3339(t.updatedAt, "updated_at"),
  };
}

export function templateJson(t: templates.Template | undefined): TemplateJson {
  if (!t) throw new Error("the service returned no template");
  return {
    ...templateSummaryJson(t),
    mjml_content: t.mjmlContent,
    from_email: t.fromEmail || null,
    from_name: t.fromName || null,
    reply_to: t.replyTo || null,
  };
}

export interface TemplateVersionJson {
  version: number;
  subject: string;
  mjml_content?: string;
  variables: string[];
  from_email: string | null;
  from_name: string | null;
  reply_to: string | null;
  created_at: string;
}

/** A committed version; its MJML only when one version is read (`withMjml`). */
export function templateVersionJson(v: templates.TemplateVersion | undefined, withMjml: boolean): TemplateVersionJson {
  if (!v) throw new Error("the service returned no version");
  return {
    version: v.version,
    subject: v.subject,
    ...(withMjml ? { mjml_content: v.mjmlContent } : {}),
    variables: v.variables,
    from_email: v.fromEmail || null,
    from_name: v.fromName || null,
    reply_to: v.replyTo || null,
    created_at: rfc3339(v.createdAt, "created_at"),
  };
}

export function templatePreviewJson(p: Pick<templates.PreviewTemplateResponse, "html" | "subject" | "text" | "missingVariables">): TemplatePreviewJson {
  return { html: p.html, subject: p.subject, text: p.text, missing_variables: p.missingVariables };
}
