import type { JsonObject } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type { delivery } from "@emailsvc/proto";
import { Problem } from "../http/problem.js";
import { callOptions, requireClient } from "./calls.js";
import { defineRoute, type RouteKit } from "./define.js";
import { emailJson, emailQueuedJson, nextCursor, sandboxMessageJson } from "./mapping.js";

interface EmailSendBody {
  template_slug: string;
  to: string;
  variables?: JsonObject;
  idempotency_key?: string;
}

/** The header that carries the idempotency key (Stripe's name), as declared in the document. */
const IDEMPOTENCY_HEADER = "Idempotency-Key";

/**
 * The key of a send: from the `Idempotency-Key` header or the body's
 * `idempotency_key`; both may be given when they agree. "" when none.
 */
export function idempotencyKey(headerKey: string | undefined, bodyKey: string | undefined): string {
  if (headerKey !== undefined && bodyKey !== undefined && headerKey !== bodyKey) {
    throw new Problem(400, "validation_failed", "The idempotency key of the body differs from the Idempotency-Key header.", {
      errors: [{ field: "idempotency_key", message: "differs from the Idempotency-Key header" }],
    });
  }
  return bodyKey ?? headerKey ?? "";
}

/**
 * /api/v1/emails: REST in, DeliveryService calls out. Without a client
 * (DELIVERY_URL not configured) every route answers 503 `service_unavailable`
 * once the caller is authenticated and the request is valid.
 */
export function emailRoutes(kit: RouteKit, client: Client<typeof delivery.DeliveryService> | undefined, timeoutMs: number): void {
  const service = () => requireClient(client, "delivery");

  // 202 Accepted: the email is queued, not sent (as SendGrid's mail/send).
  defineRoute(kit, "post", "/api/v1/emails/send", "sendEmail", async (ctx) => {
    const body = ctx.state.body as EmailSendBody;
    const key = idempotencyKey(ctx.state.headers?.[IDEMPOTENCY_HEADER] as string | undefined, body.idempotency_key);
    const res = await service().sendEmail(
      {
        templateSlug: body.template_slug,
        to: body.to,
        // Left out and {} are one body for the idempotency comparison.
        variables: body.variables ?? {},
        idempotencyKey: key,
      },
      callOptions(ctx, timeoutMs),
    );
    // The same status and body for the original and every replay (Stripe);
    // only the header tells them apart.
    const email = emailQueuedJson(res.email);
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
