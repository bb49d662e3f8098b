import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { categoryFromJson, templateJson, templatePreviewJson, templateSummaryJson, templateVersionJson } from "./mapping.js";
import {
  TEMPLATE_BODY_LIMIT_BYTES,
  type TemplateCreateBody,
  type TemplateDraftPreviewBody,
  type TemplatePreviewBody,
  type TemplateUpdateBody,
} from "./schemas.js";

/**
 * /api/v1/templates: REST in, TemplateService calls out. Without the service
 * (TEMPLATES_URL not configured) every route answers 503 `service_unavailable`
 * once the caller is authenticated and the request is valid.
 */
export function templateRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("templates");
  const client = transport && createClient(templates.TemplateService, transport);
  const service = () => requireClient(client, "templates");
  const { timeoutMs } = context;
  // MJML may be large: create and update take more than the default body.
  const large = { bodyLimitBytes: Math.max(kit.bodyLimitBytes, TEMPLATE_BODY_LIMIT_BYTES) };

  defineRoute(
    kit,
    "post",
    "/api/v1/templates",
    "createTemplate",
    async (ctx) => {
      const body = ctx.state.body as TemplateCreateBody;
      const res = await service().createTemplate(
        {
          name: body.name,
          subject: body.subject,
          mjmlContent: body.mjml_content,
          category: categoryFromJson(body.category),
          ignoreSuppressions: body.ignore_suppressions ?? [],
          slug: body.slug,
          fromEmail: body.from_email,
          fromName: body.from_name,
          replyTo: body.reply_to,
        },
        callOptions(ctx, timeoutMs),
      );
      ctx.status = 201;
      ctx.body = templateJson(res.template);
    },
    large,
  );

  defineRoute(
    kit,
    "post",
    "/api/v1/templates/preview",
    "previewTemplateDraft",
    async (ctx) => {
      const body = ctx.state.body as TemplateDraftPreviewBody;
      const res = await service().previewDraft(
        { subject: body.subject, mjmlContent: body.mjml_content, variables: (body.variables ?? {}) as JsonObject },
        callOptions(ctx, timeoutMs),
      );
      ctx.body = { ...templatePreviewJson(res), variables: res.variables };
    },
    large,
  );

  defineRoute(kit, "get", "/api/v1/templates/:id/versions", "listTemplateVersions", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listTemplateVersions({ id: ctx.params.id ?? "", limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.versions.map((v) => templateVersionJson(v, false)), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/templates/:id/versions/:version", "getTemplateVersion", async (ctx) => {
    const res = await service().getTemplateVersion({ id: ctx.params.id ?? "", version: Number(ctx.params.version) }, callOptions(ctx, timeoutMs));
    ctx.body = templateVersionJson(res.version, true);
  });

  defineRoute(kit, "get", "/api/v1/templates", "listTemplates", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listTemplates({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.templates.map(templateSummaryJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/templates/:id", "getTemplate", async (ctx) => {
    const res = await service().getTemplate({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = templateJson(res.template);
  });

  defineRoute(
    kit,
    "patch",
    "/api/v1/templates/:id",
    "updateTemplate",
    async (ctx) => {
      const body = ctx.state.body as TemplateUpdateBody;
      const res = await service().updateTemplate(
        {
          id: ctx.params.id ?? "",
          name: body.name,
          subject: body.subject,
          mjmlContent: body.mjml_content,
          category: categoryFromJson(body.category),
          // null removes a field: "" to the service.
          fromEmail: body.from_email === null ? "" : body.from_email,
          fromName: body.from_name === null ? "" : body.from_name,
          replyTo: body.reply_to === null ? "" : body.reply_to,
          ...(body.ignore_suppressions !== undefined ? { ignoreSuppressions: { reasons: body.ignore_suppressions } } : {}),
        },
        callOptions(ctx, timeoutMs),
      );
      ctx.body = templateJson(res.template);
    },
    large,
  );

  defineRoute(kit, "delete", "/api/v1/templates/:id", "deleteTemplate", async (ctx) => {
    await service().deleteTemplate({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/templates/:id/preview", "previewTemplate", async (ctx) => {
    const body = ctx.state.body as TemplatePreviewBody;
    const res = await service().previewTemplate(
      { id: ctx.params.id ?? "", variables: (body.variables ?? {}) as JsonObject },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = templatePreviewJson(res);
  });
}
