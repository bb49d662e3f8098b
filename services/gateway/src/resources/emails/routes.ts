import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { errorFromParts } from "@emailsvc/errors";
import { Problem, problemBody, problemFromConnect, type ProblemBody } from "../../http/problem.js";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { emailJson, emailQueuedJson, emailStatusFromJson, sandboxMessageJson, type EmailQueuedJson } from "./mapping.js";
import { BATCH_BODY_LIMIT_BYTES, type EmailSendBody } from "./schemas.js";

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

/** One batch entry (schema EmailBatchEntry). */
interface BatchEntry {
  index: number;
  status: number;
  email: EmailQueuedJson | null;
  replayed: boolean;
  error: ProblemBody | null;
}

/** A send's body as DeliveryService takes it; `headerKey` the Idempotency-Key header's ("" for none). */
function sendRequest(body: EmailSendBody, headerKey: string) {
  return {
    templateSlug: body.template_slug,
    to: body.to,
    // Left out and {} are one body for the idempotency comparison.
    variables: (body.variables ?? {}) as JsonObject,
    idempotencyKey: headerKey || body.idempotency_key || "",
    fromEmail: body.from?.email ?? "",
    fromName: body.from?.name ?? "",
    replyTo: body.reply_to ?? "",
  };
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
    const res = await service().sendEmail(sendRequest(body, key), callOptions(ctx, timeoutMs));
    // The same status and body for the original and every replay (Stripe);
    // only the header tells them apart.
    const email = emailQueuedJson(res.email, res.refused);
    ctx.status = 202;
    ctx.set("Location", `/api/v1/emails/${encodeURIComponent(email.id)}`);
    if (res.replayed) ctx.set("Idempotent-Replayed", "true");
    ctx.body = email;
  });

  // 200 once the batch was read; each entry has the status a single send would have answered.
  const validateMessage = kit.validators.component("EmailSend");
  defineRoute(
    kit,
    "post",
    "/api/v1/emails/batch",
    "sendEmailBatch",
    async (ctx) => {
      const messages = ctx.state.body as unknown[];
      const results = new Array<BatchEntry>(messages.length);
      const errorEntry = (index: number, problem: Problem): BatchEntry => ({
        index,
        status: problem.status,
        email: null,
        replayed: false,
        error: problemBody(problem, ctx.state.requestId),
      });
      // Each message is checked on its own, as a single send's body: a bad one fails alone.
      const valid: Array<{ index: number; request: ReturnType<typeof sendRequest> }> = [];
      messages.forEach((message, index) => {
        try {
          valid.push({ index, request: sendRequest(validateMessage(message) as EmailSendBody, "") });
        } catch (err) {
          if (!(err instanceof Problem)) throw err;
          results[index] = errorEntry(index, err);
        }
      });
      if (valid.length > 0) {
        const res = await service().sendEmails({ messages: valid.map((v) => v.request) }, callOptions(ctx, timeoutMs));
        if (res.results.length !== valid.length) throw new Error(`delivery answered ${res.results.length} results for ${valid.length} messages`);
        res.results.forEach((result, i) => {
          const { index } = valid[i]!;
          const outcome = result.outcome;
          if (outcome.case === "sent") {
            results[index] = { index, status: 202, email: emailQueuedJson(outcome.value.email, outcome.value.refused), replayed: outcome.value.replayed, error: null };
          } else if (outcome.case === "error") {
            const { problem } = problemFromConnect(
              errorFromParts({ code: outcome.value.grpcCode, message: outcome.value.message, detail: outcome.value.detail, metadata: outcome.value.metadata }),
            );
            results[index] = errorEntry(index, problem);
          } else {
            throw new Error("delivery answered a batch result without an outcome");
          }
        });
      }
      const accepted = results.filter((r) => r.status === 202).length;
      ctx.status = 200;
      ctx.body = { accepted, failed: results.length - accepted, results };
    },
    // Each message counts one against the send budgets (all or none), once the body tells how many.
    { bodyLimitBytes: BATCH_BODY_LIMIT_BYTES, rateCost: (ctx) => (ctx.state.body as unknown[]).length },
  );

  defineRoute(kit, "get", "/api/v1/emails", "listEmails", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string; status?: string; campaign_id?: string; subscriber_id?: string };
    const res = await service().listEmails(
      { limit: query.limit, cursor: query.cursor ?? "", status: emailStatusFromJson(query.status), campaignId: query.campaign_id ?? "", subscriberId: query.subscriber_id ?? "" },
      callOptions(ctx, timeoutMs),
    );
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
