import { Code, ConnectError, createClient, type CallOptions } from "@connectrpc/connect";
import { delivery, SubscriberService, UnsubscribeAllOutcome } from "@emailsvc/proto";
import { pickLocale } from "@emailsvc/text";
import { TokenError, verifyToken, type VerifiedToken } from "@emailsvc/tokens";
import { readBody } from "../../http/body.js";
import { Problem } from "../../http/problem.js";
import { NO_UNSUBSCRIBE_GUARD, unsubscribeGuard } from "../../http/rate-limit.js";
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
 * and changes nothing (scanners follow links); POST unsubscribes at once,
 * with the subscribers service's UnsubscribeAll, the same operation as the
 * preference portal's "unsubscribe from everything". Both speak the
 * subscriber's language and name the sender; a problem is a page for a
 * browser (a broken link: "not valid"; a body no mail client sends: what the
 * address takes) and problem+json for a client that asks for JSON. Budgets
 * per client address and, for the POST, per link (RATE_LIMIT_UNSUBSCRIBE_*)
 * are charged before any service is called.
 */
export function unsubscribeRoutes(kit: RouteKit, context: ResourceContext): void {
  const subscribersTransport = context.transport("subscribers");
  if (!subscribersTransport) throw new Error("the unsubscribe routes need the subscribers service");
  const subscribers = createClient(SubscriberService, subscribersTransport);
  const deliveryTransport = context.transport("delivery");
  const emails = deliveryTransport && createClient(delivery.DeliveryService, deliveryTransport);
  const { timeoutMs, tokenKeys } = context;
  const guard = kit.limiter ? unsubscribeGuard(kit.limiter) : NO_UNSUBSCRIBE_GUARD;

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
   * the browser's), and the sender's name (SenderNames: the portal setting
   * `sender_name`, else the account's name, kept briefly). A lookup that
   * fails leaves the defaults: the page matters more than its wording.
   */
  async function voiceOf(ctx: GatewayRouterContext, token: VerifiedToken, options: CallOptions): Promise<PageVoice> {
    const [subscriber, sender] = await Promise.all([
      token.subscriberId ? subscribers.getSubscriber({ id: token.subscriberId }, options).catch(() => undefined) : undefined,
      context.senderNames.of({ accountId: token.accountId, mode: token.mode }),
    ]);
    const locale = pickLocale(undefined, subscriber?.subscriber?.locale, ctx.get("accept-language"));
    ctx.state.pageLocale = locale;
    return { locale, sender };
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
      await guard.address(ctx);
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
      await guard.address(ctx);
      // The body is checked before the token so that bad requests are told apart from bad links.
      await readOneClickBody(ctx);
      const token = verified(ctx);
      // Whose link it is: the subscriber, else the email it was sent as (an address that was no subscriber).
      await guard.link(ctx, `${token.accountId}:${token.mode}:${token.subscriberId ? `s:${token.subscriberId}` : `e:${token.emailId ?? ""}`}`);
      const options = callsFor(ctx, token);
      const audit = requestAudit(ctx, "one_click", context.clientIp);
      const [voice, outcome] = await Promise.all([voiceOf(ctx, token, options), unsubscribeLink(token, options, audit)]);
      donePage(ctx, voice, outcome === UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED || outcome === UnsubscribeAllOutcome.ADDRESS_SUPPRESSED ? "already" : "now");
    },
    { problemPage },
  );

  /** Unsubscribes whom the link was for: its subscriber, else the address its email went to. */
  async function unsubscribeLink(token: VerifiedToken, options: CallOptions, audit: Audit): Promise<UnsubscribeAllOutcome> {
    if (token.subscriberId) return unsubscribeAll({ case: "subscriberId", value: token.subscriberId }, options, audit);
    if (!token.emailId) return UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED;
    // The mail went to an address that was no subscriber: find it through the email.
    const res = await requireClient(emails, "delivery").getEmail({ id: token.emailId }, options).catch(notFoundAsUndefined);
    const to = res?.email?.to ?? "";
    // An email erased with its recipient has no address left: that person is gone (and suppressed) already.
    if (to === "") return UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED;
    return unsubscribeAll({ case: "email", value: to }, options, audit);
  }

  /**
   * The subscribers service's "unsubscribe from everything" (the portal's
   * button does the same): no marketing mail, every public list left, a
   * bounced or complained subscriber's opt-out recorded. An erased subscriber
   * (NOT_FOUND: their token outlived them) gets none already.
   */
  async function unsubscribeAll(
    recipient: { case: "subscriberId"; value: string } | { case: "email"; value: string },
    options: CallOptions,
    audit: Audit,
  ): Promise<UnsubscribeAllOutcome> {
    const res = await subscribers.unsubscribeAll({ recipient, audit }, options).catch(notFoundAsUndefined);
    return res?.outcome ?? UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED;
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
