import { Code, ConnectError, createClient, type CallOptions } from "@connectrpc/connect";
import { delivery, SubscriberService, SubscriberStatus } from "@emailsvc/proto";
import { readError } from "@emailsvc/runtime";
import { TokenError, verifyToken, type VerifiedToken } from "@emailsvc/tokens";
import { readBody } from "../../http/body.js";
import { Problem } from "../../http/problem.js";
import type { GatewayRouterContext } from "../../http/state.js";
import { callOptionsAs, requestAudit, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { confirmPage, donePage, invalidLinkPage } from "./pages.js";
import { ONE_CLICK_FIELD, ONE_CLICK_VALUE, UNSUBSCRIBE_BODY_LIMIT_BYTES } from "./schemas.js";

/** The audit trail's actor of a one-click unsubscribe. */
export const ONE_CLICK_ACTOR = "one_click";

/**
 * /unsubscribe: the link of `List-Unsubscribe`. GET shows a confirmation page
 * and changes nothing (scanners follow links); POST unsubscribes at once.
 */
export function unsubscribeRoutes(kit: RouteKit, context: ResourceContext): void {
  const subscribersTransport = context.transport("subscribers");
  if (!subscribersTransport) throw new Error("the unsubscribe routes need the subscribers service");
  const subscribers = createClient(SubscriberService, subscribersTransport);
  const deliveryTransport = context.transport("delivery");
  const emails = deliveryTransport && createClient(delivery.DeliveryService, deliveryTransport);
  const { timeoutMs, tokenKeys } = context;

  /** The verified token, or undefined after answering with the "not valid" page. */
  function verified(ctx: GatewayRouterContext): VerifiedToken | undefined {
    if (!tokenKeys) throw new Problem("service_unavailable", "Unsubscribe links are not configured on this gateway (TOKEN_SIGNING_KEYS).");
    try {
      return verifyToken(tokenKeys, String(ctx.state.query?.token ?? ""), { purpose: "unsubscribe" });
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      invalidLinkPage(ctx);
      return undefined;
    }
  }

  defineRoute(kit, "get", "/unsubscribe", "getUnsubscribePage", async (ctx) => {
    if (verified(ctx)) confirmPage(ctx);
  });

  defineRoute(kit, "post", "/unsubscribe", "unsubscribeOneClick", async (ctx) => {
    // The body is checked before the token so that bad requests are told apart from bad links.
    await readOneClickBody(ctx);
    const token = verified(ctx);
    if (!token) return;
    const options = callOptionsAs(
      ctx,
      { tenant: { accountId: token.accountId, mode: token.mode }, actor: ONE_CLICK_ACTOR, requestId: ctx.state.requestId },
      timeoutMs,
    );
    const audit = requestAudit(ctx, "one_click", context.clientIp);
    if (token.subscriberId) {
      await unsubscribeSubscriber(token.subscriberId, options, audit);
    } else if (token.emailId) {
      // The mail went to an address that was no subscriber: find it through the email.
      const res = await requireClient(emails, "delivery").getEmail({ id: token.emailId }, options).catch(notFoundAsUndefined);
      const to = res?.email?.to ?? "";
      if (to !== "") await unsubscribeAddress(to, options, audit);
    }
    donePage(ctx);
  });

  /** Active becomes unsubscribed; bounced, complained and unsubscribed stay; an erased subscriber is done already. */
  async function unsubscribeSubscriber(id: string, options: CallOptions, audit: Audit): Promise<void> {
    const found = await subscribers.getSubscriber({ id }, options).catch(notFoundAsUndefined);
    if (found?.subscriber?.status !== SubscriberStatus.ACTIVE) return;
    await subscribers.updateSubscriber({ id, status: SubscriberStatus.UNSUBSCRIBED, audit }, options).catch(notFoundAsUndefined);
  }

  async function unsubscribeAddress(email: string, options: CallOptions, audit: Audit): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const found = await subscribers.getSubscriberByEmail({ email }, options).catch(notFoundAsUndefined);
      if (found?.subscriber) return unsubscribeSubscriber(found.subscriber.id, options, audit);
      try {
        // Kept as an unsubscribed subscriber: the suppression that stops later marketing mail.
        await subscribers.createSubscriber({ email, status: SubscriberStatus.UNSUBSCRIBED, audit }, options);
        return;
      } catch (err) {
        const info = readError(err);
        // Erased at its owner's request: suppressed already, nothing to keep.
        if (info.errorCode === "subscriber_suppressed") return;
        // Created meanwhile (by an import, say): look it up again.
        if (info.code !== Code.AlreadyExists) throw err;
      }
    }
  }
}

type Audit = ReturnType<typeof requestAudit>;

function notFoundAsUndefined(err: unknown): undefined {
  if (ConnectError.from(err).code === Code.NotFound) return undefined;
  throw err;
}

/** RFC 8058's body, `List-Unsubscribe=One-Click`, form-encoded; anything else is a 400 or 415. */
async function readOneClickBody(ctx: GatewayRouterContext): Promise<void> {
  const type = (ctx.get("content-type") || "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    throw new Problem("unsupported_media_type", `Send the body as application/x-www-form-urlencoded: ${ONE_CLICK_FIELD}=${ONE_CLICK_VALUE}.`);
  }
  const text = (await readBody(ctx.req, UNSUBSCRIBE_BODY_LIMIT_BYTES)).toString("latin1");
  const fields = [...new URLSearchParams(text)];
  if (fields.length !== 1 || fields[0]![0] !== ONE_CLICK_FIELD || fields[0]![1] !== ONE_CLICK_VALUE) {
    throw new Problem("validation_failed", `The body must be exactly ${ONE_CLICK_FIELD}=${ONE_CLICK_VALUE}.`, {
      errors: [{ field: ONE_CLICK_FIELD, message: `must be ${ONE_CLICK_VALUE}, and the only field` }],
    });
  }
}
