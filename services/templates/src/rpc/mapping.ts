import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { templates } from "@emailsvc/proto";
import type { RenderedMessage } from "@emailsvc/render";
import type { Category, CompiledView, TemplateView } from "../domain/template.js";
import type { VersionView } from "../usecases/list-template-versions.js";

// proto <-> domain only; no rules here.

const { TemplateCategory } = templates;

export function categoryFromProto(category: templates.TemplateCategory): Category | undefined {
  switch (category) {
    case TemplateCategory.TRANSACTIONAL:
      return "transactional";
    case TemplateCategory.MARKETING:
      return "marketing";
    default:
      return undefined;
  }
}

const TO_PROTO: Record<Category, templates.TemplateCategory> = {
  transactional: TemplateCategory.TRANSACTIONAL,
  marketing: TemplateCategory.MARKETING,
};

export function templateToProto(view: TemplateView): templates.Template {
  return create(templates.TemplateSchema, {
    id: view.id,
    slug: view.slug,
    name: view.name,
    subject: view.subject,
    mjmlContent: view.mjml,
    category: TO_PROTO[view.category],
    ignoreSuppressions: view.ignoreSuppressions,
    version: view.version,
    variables: view.variables,
    fromEmail: view.sender.fromEmail,
    fromName: view.sender.fromName,
    replyTo: view.sender.replyTo,
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
  });
}

export function compiledToProto(view: CompiledView): templates.CompiledTemplate {
  return create(templates.CompiledTemplateSchema, {
    templateId: view.templateId,
    slug: view.slug,
    version: view.version,
    category: TO_PROTO[view.category],
    ignoreSuppressions: view.ignoreSuppressions,
    subject: view.subject,
    html: view.html,
    variables: view.variables,
    fromEmail: view.sender.fromEmail,
    fromName: view.sender.fromName,
    replyTo: view.sender.replyTo,
  });
}

export function previewToProto(message: RenderedMessage): templates.PreviewTemplateResponse {
  return create(templates.PreviewTemplateResponseSchema, {
    html: message.html,
    subject: message.subject,
    text: message.text,
    missingVariables: message.missing,
  });
}

export function draftPreviewToProto(message: RenderedMessage & { variables: string[] }): templates.PreviewDraftResponse {
  return create(templates.PreviewDraftResponseSchema, {
    html: message.html,
    subject: message.subject,
    text: message.text,
    missingVariables: message.missing,
    variables: message.variables,
  });
}

export function versionToProto(view: VersionView): templates.TemplateVersion {
  return create(templates.TemplateVersionSchema, {
    version: view.version,
    subject: view.subject,
    mjmlContent: view.mjml,
    variables: view.variables,
    fromEmail: view.sender.fromEmail,
    fromName: view.sender.fromName,
    replyTo: view.sender.replyTo,
    createdAt: timestampFromMs(view.createdAt),
  });
}
