import { Code, ConnectError, createClient, type CallOptions } from "@connectrpc/connect";
import { delivery, portal, SubscriberService, SubscriberStatus } from "@emailsvc/proto";
import { pickLocale, readError } from "@emailsvc/runtime";
import { TokenError, verifyToken, type VerifiedToken } from "@emailsvc/tokens";
import { readBody } from "../../http/body.js";
import { Problem } from "../../http/problem.js";
import type { GatewayContext, GatewayRouterContext } from "../../http/state.js";
import { callOptionsAs, requestAudit, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { confirmPage, donePage, problemPage as problemPageOf, type PageVoice } from "./pages.js";
import { ONE_CLICK_FIELD, ONE_CLICK_VALUE, UNSUBSCRIBE_BODY_LIMIT_BYTES, UNSUBSCRIBE_MULTIPART_LIMIT_BYTES } from "./schemas.js";

/** The audit trail's actor of a one-click unsubscribe. */
export const ONE_CLICK_ACTOR = "one_click";

/**
 * /unsubscribe: the link of `List-Unsubscribe`. GET shows a confirmation page
 * and changes nothing (scanners follow links); POST unsubscribes at once.
 * Both speak the subscriber's language and name the sender; a problem is a
 * page for a browser (a broken link: "not valid") and problem+json for a
 * client that asks for JSON.
 */
export function unsubscribeRoutes(kit: RouteKit, context: ResourceContext): void {
  const subscribersTransport = context.transport("subscribers");
  if (!subscribersTransport) throw new Error("the unsubscribe routes need the subscribers service");
  const subscribers = createClient(SubscriberService, subscribersTransport);
  const deliveryTransport = context.transport("delivery");
  const emails = deliveryTransport && createClient(delivery.DeliveryService, deliveryTransport);
  const portalTransport = context.transport("portal");
  const portalSettings = portalTransport && createClient(portal.PortalSettingsService, portalTransport);
  const { timeoutMs, tokenKeys } = context;

  /** The language of a page without a subscriber to ask: the browser's. */
  const browserLocale = (ctx: GatewayContext) => pickLocale(undefined, undefined, ctx.get("accept-language"));
  const problemPage = (ctx: GatewayContext, problem: Problem) => problemPageOf(ctx, problem, ctx.state.pageLocale ?? browserLocale(ctx));

  /** The verified token; a token that does not verify is a 403 `invalid_link`. */
  function verified(ctx: GatewayRouterContext): VerifiedToken {
    if (!tokenKeys) throw new Problem("service_unavailable", "Unsubscribe links are not configured on this gateway (TOKEN_SIGNING_KEYS).");
    try {
      return verifyToken(tokenKeys, String(ctx.state.query?.token ?? ""), { purpose: "unsubscribe" });
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      throw new Problem("invalid_link", "The unsubscribe link is not valid: it expired, was changed, or is not an unsubscribe link. Nothing was changed.");
    }
  }

  /**
   * Who the page speaks to and about: the subscriber's stored language (else
   * the browser's), and the sender's name (the portal setting `sender_name`,
   * else the account's name). Lookups that fail leave the defaults: the page
   * matters more than its wording.
   */
  async function voiceOf(ctx: GatewayRouterContext, token: VerifiedToken, options: CallOptions): Promise<PageVoice> {
    const [subscriber, settings, account] = await Promise.all([
      token.subscriberId ? subscribers.getSubscriber({ id: token.subscriberId }, options).catch(() => undefined) : undefined,
      portalSettings?.getPortalSettings({}, options).catch(() => undefined),
      context.accounts.getAccount(token.accountId).catch(() => undefined),
    ]);
    const locale = pickLocale(undefined, subscriber?.subscriber?.locale, ctx.get("accept-language"));
    ctx.state.pageLocale = locale;
    return { locale, sender: settings?.settings?.senderName || account?.name || "" };
  }

  /** Calls on behalf of the link: its tenant, the actor one_click. */
  const callsFor = (ctx: GatewayRouterContext, token: VerifiedToken) =>
    callOptionsAs(ctx, { tenant: { accountId: token.accountId, mode: token.mode }, actor: ONE_CLICK_ACTOR, requestId: ctx.state.requestId }, timeoutMs);

  defineRoute(
    kit,
    "get",
    "/unsubscribe",
    "getUnsubscribePage",
    async (ctx) => {
      const token = verified(ctx);
      confirmPage(ctx, await voiceOf(ctx, token, callsFor(ctx, token)));
    },
    { problemPage },
  );

  defineRoute(
    kit,
    "post",
    "/unsubscribe",
    "unsubscribeOneClick",
    async (ctx) => {
      // The body is checked before the token so that bad requests are told apart from bad links.
      await readOneClickBody(ctx);
      const token = verified(ctx);
      const options = callsFor(ctx, token);
      const voice = await voiceOf(ctx, token, options);
      const audit = requestAudit(ctx, "one_click", context.clientIp);
      if (token.subscriberId) {
        await unsubscribeSubscriber(token.subscriberId, options, audit);
      } else if (token.emailId) {
        // The mail went to an address that was no subscriber: find it through the email.
        const res = await requireClient(emails, "delivery").getEmail({ id: token.emailId }, options).catch(notFoundAsUndefined);
        const to = res?.email?.to ?? "";
        if (to !== "") await unsubscribeAddress(to, options, audit);
      }
      donePage(ctx, voice);
    },
    { problemPage },
  );

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

/**
 * RFC 8058's body, `List-Unsubscribe=One-Click`: form-encoded, or
 * multipart/form-data (which RFC 8058 says senders SHOULD use), one field and
 * nothing else; anything else is a 400 or 415. Bounded: the form is one short
 * field, multipart adds a boundary and a part header or two.
 */
async function readOneClickBody(ctx: GatewayRouterContext): Promise<void> {
  const header = ctx.get("content-type") || "";
  const type = header.split(";")[0]!.trim().toLowerCase();
  let fields: Array<[string, unknown]>;
  if (type === "application/x-www-form-urlencoded") {
    const text = (await readBody(ctx.req, UNSUBSCRIBE_BODY_LIMIT_BYTES)).toString("latin1");
    fields = [...new URLSearchParams(text)];
  } else if (type === "multipart/form-data") {
    const raw = await readBody(ctx.req, UNSUBSCRIBE_MULTIPART_LIMIT_BYTES);
    try {
      // The platform's own multipart parser (fetch's Response#formData), on a body already bounded.
      fields = [...(await new Response(raw, { headers: { "content-type": header } }).formData())];
    } catch {
      throw new Problem("validation_failed", "The multipart body could not be read (a boundary missing or wrong).", {
        errors: [{ field: ONE_CLICK_FIELD, message: `must be sent as one form field ${ONE_CLICK_FIELD}=${ONE_CLICK_VALUE}` }],
      });
    }
  } else {
    throw new Problem(
      "unsupported_media_type",
      `Send the body as multipart/form-data or application/x-www-form-urlencoded: ${ONE_CLICK_FIELD}=${ONE_CLICK_VALUE}.`,
    );
  }
  // A file part (a Blob) is no form value.
  if (fields.length !== 1 || fields[0]![0] !== ONE_CLICK_FIELD || fields[0]![1] !== ONE_CLICK_VALUE) {
    throw new Problem("validation_failed", `The body must be exactly ${ONE_CLICK_FIELD}=${ONE_CLICK_VALUE}.`, {
      errors: [{ field: ONE_CLICK_FIELD, message: `must be ${ONE_CLICK_VALUE}, and the only field` }],
    });
  }
}
