import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { webhooks } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import { createWebhook } from "../usecases/create-webhook.js";
import type { DeliveryView } from "../usecases/deliveries.js";
import { deleteWebhook } from "../usecases/delete-webhook.js";
import type { Deps, Scope, WebhookView } from "../usecases/deps.js";
import { getWebhook } from "../usecases/get-webhook.js";
import { listDeliveries } from "../usecases/list-deliveries.js";
import { listWebhooks } from "../usecases/list-webhooks.js";
import { replayDelivery } from "../usecases/replay-delivery.js";
import { rotateSecret } from "../usecases/rotate-secret.js";
import { updateWebhook } from "../usecases/update-webhook.js";

const ts = (ms: number) => (ms > 0 ? timestampFromMs(ms) : undefined);

function webhookToProto(view: WebhookView): webhooks.Webhook {
  return create(webhooks.WebhookSchema, {
    id: view.id,
    url: view.url,
    events: view.events,
    description: view.description,
    isActive: view.isActive,
    disabledReason: view.disabledReason,
    disabledAt: ts(view.disabledAt),
    createdAt: ts(view.createdAt),
    updatedAt: ts(view.updatedAt),
    previousSecretExpiresAt: ts(view.previousSecretExpiresAt),
  });
}

function deliveryToProto(view: DeliveryView): webhooks.WebhookDelivery {
  return create(webhooks.WebhookDeliverySchema, {
    id: view.id,
    eventType: view.eventType,
    state: view.state,
    attempts: view.attempts,
    lastResponseCode: view.lastCode,
    lastDurationMs: view.lastDurationMs,
    lastError: view.lastError,
    lastAttemptAt: ts(view.lastAttemptAt),
    nextAttemptAt: ts(view.nextAttemptAt),
    createdAt: ts(view.createdAt),
    attemptLog: view.attemptLog.map((a) => ({ at: ts(a.at), responseCode: a.code, durationMs: a.duration_ms, error: a.error })),
  });
}

/** Registers WebhookService: proto in, use case, proto out. */
export function webhookRoutes(deps: Deps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  return (router) => {
    router.service(webhooks.WebhookService, {
      async createWebhook(req, ctx) {
        const created = await createWebhook(deps, scopeOf(readCallContext(ctx)), { url: req.url, events: req.events, description: req.description });
        return { webhook: webhookToProto(created.webhook), secret: created.secret };
      },
      async getWebhook(req, ctx) {
        return { webhook: webhookToProto(await getWebhook(deps, scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listWebhooks(req, ctx) {
        const page = await listWebhooks(deps, scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor });
        return { webhooks: page.items.map(webhookToProto), nextCursor: page.nextCursor };
      },
      async updateWebhook(req, ctx) {
        const view = await updateWebhook(deps, scopeOf(readCallContext(ctx)), {
          id: req.id,
          url: req.url,
          events: req.events?.events,
          description: req.description,
          isActive: req.isActive,
        });
        return { webhook: webhookToProto(view) };
      },
      async deleteWebhook(req, ctx) {
        await deleteWebhook(scopeOf(readCallContext(ctx)), req.id);
        return {};
      },
      async rotateWebhookSecret(req, ctx) {
        const rotated = await rotateSecret(deps, scopeOf(readCallContext(ctx)), req.id);
        return { webhook: webhookToProto(rotated.webhook), secret: rotated.secret };
      },
      async listWebhookDeliveries(req, ctx) {
        const page = await listDeliveries(scopeOf(readCallContext(ctx)), { webhookId: req.webhookId, limit: req.limit, cursor: req.cursor });
        return { deliveries: page.items.map(deliveryToProto), nextCursor: page.nextCursor };
      },
      async replayWebhookDelivery(req, ctx) {
        return { delivery: deliveryToProto(await replayDelivery(deps, scopeOf(readCallContext(ctx)), { webhookId: req.webhookId, deliveryId: req.deliveryId })) };
      },
    });
  };
}
