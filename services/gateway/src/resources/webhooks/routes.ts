import { createClient } from "@connectrpc/connect";
import { webhooks } from "@emailsvc/proto";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor, rfc3339, rfc3339OrNull, stringOrNull } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import type { WebhookCreateBody, WebhookUpdateBody } from "./schemas.js";

function webhookJson(w: webhooks.Webhook | undefined) {
  if (!w) throw new Error("the service returned no webhook");
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    description: w.description,
    is_active: w.isActive,
    disabled_reason: stringOrNull(w.disabledReason),
    disabled_at: rfc3339OrNull(w.disabledAt),
    created_at: rfc3339(w.createdAt, "created_at"),
    updated_at: rfc3339(w.updatedAt, "updated_at"),
    previous_secret_expires_at: rfc3339OrNull(w.previousSecretExpiresAt),
  };
}

function deliveryJson(d: webhooks.WebhookDelivery | undefined) {
  if (!d) throw new Error("the service returned no delivery");
  const answered = d.attempts > 0;
  return {
    id: d.id,
    event_type: d.eventType,
    state: d.state,
    attempts: d.attempts,
    response_code: answered && d.lastResponseCode > 0 ? d.lastResponseCode : null,
    duration_ms: answered ? d.lastDurationMs : null,
    error: stringOrNull(d.lastError),
    attempted_at: rfc3339OrNull(d.lastAttemptAt),
    next_attempt_at: rfc3339OrNull(d.nextAttemptAt),
    created_at: rfc3339(d.createdAt, "created_at"),
    attempt_log: d.attemptLog.map((a) => ({
      at: rfc3339(a.at, "at"),
      response_code: a.responseCode > 0 ? a.responseCode : null,
      duration_ms: a.durationMs,
      error: stringOrNull(a.error),
    })),
  };
}

/** /api/v1/webhooks: REST in, WebhookService (of the webhooks service) out. */
export function webhookRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("webhooks");
  const client = transport && createClient(webhooks.WebhookService, transport);
  const service = () => requireClient(client, "webhooks");
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/webhooks", "createWebhook", async (ctx) => {
    const body = ctx.state.body as WebhookCreateBody;
    const res = await service().createWebhook({ url: body.url, events: body.events, description: body.description ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 201;
    ctx.body = { ...webhookJson(res.webhook), secret: res.secret };
  });

  defineRoute(kit, "get", "/api/v1/webhooks", "listWebhooks", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listWebhooks({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.webhooks.map(webhookJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/webhooks/:id", "getWebhook", async (ctx) => {
    ctx.body = webhookJson((await service().getWebhook({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs))).webhook);
  });

  defineRoute(kit, "patch", "/api/v1/webhooks/:id", "updateWebhook", async (ctx) => {
    const body = ctx.state.body as WebhookUpdateBody;
    const res = await service().updateWebhook(
      {
        id: ctx.params.id ?? "",
        url: body.url,
        ...(body.events !== undefined ? { events: { events: body.events } } : {}),
        description: body.description,
        isActive: body.is_active,
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = webhookJson(res.webhook);
  });

  defineRoute(kit, "delete", "/api/v1/webhooks/:id", "deleteWebhook", async (ctx) => {
    await service().deleteWebhook({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/webhooks/:id/rotate-secret", "rotateWebhookSecret", async (ctx) => {
    const res = await service().rotateWebhookSecret({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { ...webhookJson(res.webhook), secret: res.secret };
  });

  defineRoute(kit, "get", "/api/v1/webhooks/:id/deliveries", "listWebhookDeliveries", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listWebhookDeliveries({ webhookId: ctx.params.id ?? "", limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.deliveries.map(deliveryJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "post", "/api/v1/webhooks/:id/deliveries/:delivery_id/replay", "replayWebhookDelivery", async (ctx) => {
    const res = await service().replayWebhookDelivery({ webhookId: ctx.params.id ?? "", deliveryId: ctx.params.delivery_id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = deliveryJson(res.delivery);
  });
}
