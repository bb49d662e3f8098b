import type { ConnectRouter } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import { createTemplate } from "../usecases/create-template.js";
import { deleteTemplate } from "../usecases/delete-template.js";
import type { Deps, Scope } from "../usecases/deps.js";
import { getCompiledTemplate } from "../usecases/get-compiled-template.js";
import { getTemplate } from "../usecases/get-template.js";
import { listTemplates } from "../usecases/list-templates.js";
import { previewTemplate } from "../usecases/preview-template.js";
import { previewDraft } from "../usecases/preview-draft.js";
import { getTemplateVersion, listTemplateVersions } from "../usecases/list-template-versions.js";
import { updateTemplate } from "../usecases/update-template.js";
import { categoryFromProto, compiledToProto, draftPreviewToProto, previewToProto, templateToProto, versionToProto } from "./mapping.js";

/** Registers TemplateService: proto in, use case, proto out. `scopeOf` gives a call its tenant's collections. */
export function templateRoutes(deps: Deps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  return (router) => {
    router.service(templates.TemplateService, {
      async createTemplate(req, ctx) {
        const view = await createTemplate(deps, scopeOf(readCallContext(ctx)), {
          name: req.name,
          subject: req.subject,
          mjml: req.mjmlContent,
          category: categoryFromProto(req.category),
          ignoreSuppressions: req.ignoreSuppressions,
          slug: req.slug,
          fromEmail: req.fromEmail,
          fromName: req.fromName,
          replyTo: req.replyTo,
        });
        return { template: templateToProto(view) };
      },
      async getTemplate(req, ctx) {
        return { template: templateToProto(await getTemplate(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listTemplates(req, ctx) {
        const page = await listTemplates(scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor });
        return { templates: page.items.map(templateToProto), nextCursor: page.nextCursor };
      },
      async updateTemplate(req, ctx) {
        const view = await updateTemplate(deps, scopeOf(readCallContext(ctx)), {
          id: req.id,
          name: req.name,
          subject: req.subject,
          mjml: req.mjmlContent,
          category: categoryFromProto(req.category),
          fromEmail: req.fromEmail,
          fromName: req.fromName,
          replyTo: req.replyTo,
          ignoreSuppressions: req.ignoreSuppressions?.reasons,
        });
        return { template: templateToProto(view) };
      },
      async deleteTemplate(req, ctx) {
        await deleteTemplate(deps, scopeOf(readCallContext(ctx)), req.id);
        return {};
      },
      async previewTemplate(req, ctx) {
        const message = await previewTemplate(deps, scopeOf(readCallContext(ctx)), { id: req.id, variables: req.variables });
        return previewToProto(message);
      },
      async previewDraft(req) {
        // No tenant's data is read or written: the content is the caller's own.
        const message = await previewDraft(deps, { subject: req.subject, mjml: req.mjmlContent, variables: req.variables });
        return draftPreviewToProto(message);
      },
      async listTemplateVersions(req, ctx) {
        const page = await listTemplateVersions(scopeOf(readCallContext(ctx)), { id: req.id, limit: req.limit, cursor: req.cursor });
        return { versions: page.items.map(versionToProto), nextCursor: page.nextCursor };
      },
      async getTemplateVersion(req, ctx) {
        return { version: versionToProto(await getTemplateVersion(scopeOf(readCallContext(ctx)), { id: req.id, version: req.version })) };
      },
      async getCompiledTemplate(req, ctx) {
        const compiled = await getCompiledTemplate(scopeOf(readCallContext(ctx)), {
          id: req.template.case === "id" ? req.template.value : undefined,
          slug: req.template.case === "slug" ? req.template.value : undefined,
          version: req.version,
        });
        return { compiled: compiledToProto(compiled) };
      },
    });
  };
}
