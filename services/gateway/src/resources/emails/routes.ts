import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { Problem } from "../../http/problem.js";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { emailJson, emailQueuedJson, sandboxMessageJson } from "./mapping.js";
import type { EmailSendBody } from "./schemas.js";

/** The header that carries the idempotency key (Stripe's name), as declared in the document. */
const IDEMPOTENCY_HEADER = "Idempotency-Key";

/**
 * The key of a send: from the `Idempotency-Key` header or the body's
 * `idempotency_key`; both may be given when they agree. "" when none.
 */
export function idempotencyKey(headerKey: string | undefined, bodyKey: string | undefined): string {
  if (headerKey !== undefined && bodyKey !== undefined && headerKey !== bodyKey) {
    throw new Problem("validation_failed", "The idempotency key of the body differs from the Idempotency-Key header.", {
      errors: [{ field: "idempotency_key", message: "differs from the Idempotency-Key header" }],
    });
  }
  return bodyKey ?? headerKey ?? "";
}

/**
 * /api/v1/emails: REST in, DeliveryService calls out. Without the service
 * (DELIVERY_URL not configured) every route answers 503 `service_unavailable`
 * once the caller is authenticated and the request is valid.
 */
export function emailRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("delivery");
  const client = transport && createClient(delivery.DeliveryService, transport);
  const service = () => requireClient(client, "delivery");
  const { timeoutMs } = context;

  // 202 Accepted: the email is queued, not sent (as SendGrid's mail/send).
  defineRoute(kit, "post", "/api/v1/emails/send", "sendEmail", async (ctx) => {
    const body = ctx.state.body as EmailSendBody;
    const key = idempotencyKey(ctx.state.headers?.[IDEMPOTENCY_HEADER] as string | undefined, body.idempotency_key);
    const res = await service().sendEmail(
      {
        templateSlug: body.template_slug,
        to: body.to,
        // Left out and {} are one body for the idempotency comparison.
        variables: (body.variables ?? {}) as JsonObject,
        idempotencyKey: key,
        fromEmail: body.from?.email ?? "",
        fromName: body.from?.name ?? "",
        replyTo: body.reply_to ?? "",
      },
      callOptions(ctx, timeoutMs),
    );
    // The same status and body for the original and every replay (Stripe);
    // only the header tells them apart.
    const email = emailQueuedJson(res.email, res.refused);
    ctx.status = 202;
    ctx.set("Location", `/api/v1/emails/${encodeURIComponent(email.id)}`);
    if (res.replayed) ctx.set("Idempotent-Replayed", "true");
    ctx.body = email;
  });

  defineRoute(kit, "get", "/api/v1/emails", "listEmails", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listEmails({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.emails.map(emailJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/emails/:id", "getEmail", async (ctx) => {
    const res = await service().getEmail({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = emailJson(res.email);
  });

  defineRoute(kit, "get", "/api/v1/emails/:id/sandbox", "getSandboxMessage", async (ctx) => {
    const res = await service().getSandboxMessage({ emailId: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = sandboxMessageJson(res.message);
  });
}
