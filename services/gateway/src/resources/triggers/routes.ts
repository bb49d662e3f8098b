import { createClient } from "@connectrpc/connect";
import { triggers } from "@emailsvc/proto";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor, rfc3339, stringOrNull } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import type { TriggerCreateBody, TriggerUpdateBody } from "./schemas.js";

function triggerJson(t: triggers.Trigger | undefined) {
  if (!t) throw new Error("the service returned no trigger");
  return {
    id: t.id,
    event_type: t.eventType,
    template_id: t.templateId,
    description: t.description,
    is_active: t.isActive,
    delay_seconds: t.delaySeconds,
    tag: t.tag,
    created_at: rfc3339(t.createdAt, "created_at"),
    updated_at: rfc3339(t.updatedAt, "updated_at"),
    disabled_reason: stringOrNull(t.disabledReason),
    last_failure: t.lastFailureReason ? { reason: t.lastFailureReason, at: rfc3339(t.lastFailureAt, "last_failure_at") } : null,
  };
}

/** /api/v1/triggers and /api/v1/event-types: REST in, TriggerService (of the campaigns service) out. */
export function triggerRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("campaigns");
  const client = transport && createClient(triggers.TriggerService, transport);
  const service = () => requireClient(client, "campaigns");
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/triggers", "createTrigger", async (ctx) => {
    const body = ctx.state.body as TriggerCreateBody;
    const res = await service().createTrigger(
      { eventType: body.event_type, templateId: body.template_id, description: body.description, delaySeconds: body.delay_seconds, tag: body.tag ?? "" },
      callOptions(ctx, timeoutMs),
    );
    ctx.status = 201;
    ctx.body = triggerJson(res.trigger);
  });

  defineRoute(kit, "get", "/api/v1/triggers", "listTriggers", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listTriggers({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.triggers.map(triggerJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/triggers/:id", "getTrigger", async (ctx) => {
    ctx.body = triggerJson((await service().getTrigger({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs))).trigger);
  });

  defineRoute(kit, "patch", "/api/v1/triggers/:id", "updateTrigger", async (ctx) => {
    const body = ctx.state.body as TriggerUpdateBody;
    const res = await service().updateTrigger(
      {
        id: ctx.params.id ?? "",
        isActive: body.is_active,
        description: body.description,
        templateId: body.template_id,
        delaySeconds: body.delay_seconds,
        tag: body.tag,
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = triggerJson(res.trigger);
  });

  defineRoute(kit, "delete", "/api/v1/triggers/:id", "deleteTrigger", async (ctx) => {
    await service().deleteTrigger({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  defineRoute(kit, "get", "/api/v1/event-types", "listEventTypes", async (ctx) => {
    const res = await service().listEventTypes({}, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.eventTypes.map((t) => ({ name: t.name, description: t.description, takes_tag: t.takesTag })) };
  });
}
