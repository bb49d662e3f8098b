import { createClient } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor, rfc3339 } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import type { FormCreateBody, FormUpdateBody } from "./schemas.js";

// /api/v1/forms: REST in, the portal's FormService out.

const FIELD_TYPES = {
  text: portal.FormFieldType.TEXT,
  number: portal.FormFieldType.NUMBER,
  boolean: portal.FormFieldType.BOOLEAN,
} as const;
const FIELD_TYPE_NAMES: Record<portal.FormFieldType, string> = {
  [portal.FormFieldType.UNSPECIFIED]: "text",
  [portal.FormFieldType.TEXT]: "text",
  [portal.FormFieldType.NUMBER]: "number",
  [portal.FormFieldType.BOOLEAN]: "boolean",
};

function formJson(f: portal.SignupForm | undefined) {
  if (!f) throw new Error("the service returned no form");
  return {
    id: f.id,
    name: f.name,
    tags: f.tags,
    optional_tags: f.optionalTags,
    ask_locale: f.askLocale,
    fields: f.fields.map((field) => ({ name: field.name, label: field.label, type: FIELD_TYPE_NAMES[field.type], required: field.required })),
    success_url: f.successUrl,
    error_url: f.errorUrl,
    allowed_origins: f.allowedOrigins,
    consent_text: f.consentText,
    consent_version: f.consentVersion,
    action_url: f.actionUrl,
    snippet: f.snippet,
    created_at: rfc3339(f.createdAt, "created_at"),
    updated_at: rfc3339(f.updatedAt, "updated_at"),
  };
}

type FormBody = Partial<FormCreateBody> & FormUpdateBody;

function formInput(body: FormBody) {
  return {
    name: body.name ?? "",
    tags: body.tags ?? [],
    optionalTags: body.optional_tags ?? [],
    askLocale: body.ask_locale ?? false,
    fields: (body.fields ?? []).map((f) => ({ name: f.name, label: f.label, type: FIELD_TYPES[f.type], required: f.required ?? false })),
    successUrl: body.success_url ?? "",
    errorUrl: body.error_url ?? "",
    allowedOrigins: body.allowed_origins ?? [],
    consentText: body.consent_text ?? "",
    consentVersion: body.consent_version ?? "",
  };
}

export function formRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("portal");
  const client = transport && createClient(portal.FormService, transport);
  const service = () => requireClient(client, "portal");
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/forms", "createForm", async (ctx) => {
    const res = await service().createForm({ form: formInput(ctx.state.body as FormCreateBody) }, callOptions(ctx, timeoutMs));
    ctx.status = 201;
    ctx.body = formJson(res.form);
  });

  defineRoute(kit, "get", "/api/v1/forms", "listForms", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listForms({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.forms.map(formJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/forms/:id", "getForm", async (ctx) => {
    ctx.body = formJson((await service().getForm({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs))).form);
  });

  defineRoute(kit, "patch", "/api/v1/forms/:id", "updateForm", async (ctx) => {
    const body = ctx.state.body as FormUpdateBody;
    // Only the fields given change (`paths` names them).
    const res = await service().updateForm({ id: ctx.params.id ?? "", form: formInput(body), paths: Object.keys(body) }, callOptions(ctx, timeoutMs));
    ctx.body = formJson(res.form);
  });

  defineRoute(kit, "delete", "/api/v1/forms/:id", "deleteForm", async (ctx) => {
    await service().deleteForm({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });
}
