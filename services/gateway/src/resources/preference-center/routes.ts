import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { portal, SubscriberService } from "@emailsvc/proto";
import { mintPreferenceLink } from "@emailsvc/tokens";
import { PREFERENCE_CHALLENGE } from "../../http/auth.js";
import { Problem } from "../../http/problem.js";
import { isId } from "@emailsvc/ids";
import type { GatewayRouterContext } from "../../http/state.js";
import { callOptions, callOptionsAs, requestAudit, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { statusToJson } from "../subscribers/mapping.js";
import { translationsJson } from "../tags/mapping.js";
import { rfc3339 } from "../../routes/json.js";
import { forwardRateLimitHeaders } from "../../http/rate-limit.js";
import { mailabilityJson } from "./mapping.js";
import type { PortalSettingsUpdateBody } from "./schemas.js";

/** The audit trail's actor of every change made through a preference token. */
export const PORTAL_ACTOR = "portal";

function preferencesJson(p: portal.Preferences | undefined) {
  if (!p) throw new Error("the service returned no preferences");
  const tag = (t: portal.PortalTag) => ({ id: t.id, name: t.name, description: t.description, translations: translationsJson(t.translations) });
  return {
    email: p.email,
    status: statusToJson(p.status),
    locale: p.locale === "" ? null : p.locale,
    subscribed_tags: p.subscribedTags.map(tag),
    available_tags: p.availableTags.map(tag),
    mailability: mailabilityJson(p.mailability),
  };
}

/**
 * POST /api/v1/subscribers/{id}/preference-token (API key), and the
 * /api/v1/preference-center API (preference token): REST in,
 * PreferenceCenterService (of the portal service) out.
 */
export function preferenceCenterRoutes(kit: RouteKit, context: ResourceContext): void {
  const subscribersTransport = context.transport("subscribers");
  if (!subscribersTransport) throw new Error("the preference-center routes need the subscribers service");
  const subscribers = createClient(SubscriberService, subscribersTransport);
  const portalTransport = context.transport("portal");
  const client = portalTransport && createClient(portal.PreferenceCenterService, portalTransport);
  const service = () => requireClient(client, "portal");
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/subscribers/:id/preference-token", "createPreferenceToken", async (ctx) => {
    if (!context.tokenKeys) throw new Problem("service_unavailable", "Preference tokens are not configured on this gateway (TOKEN_SIGNING_KEYS).");
    const auth = ctx.state.auth!;
    // Only a subscriber of this tenant gets a token (another tenant's id is a 404 like any other).
    const found = await subscribers.getSubscriber({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    // On the account's custom domain once it is active (asked of the portal, cached), else PREFERENCES_URL.
    const baseUrl = await context.preferenceLinkBase.forAccount(auth.accountId);
    const link = mintPreferenceLink(context.tokenKeys, { accountId: auth.accountId, mode: auth.mode, subscriberId: found.subscriber!.id }, { ...context.preferenceLinks, baseUrl });
    ctx.status = 201;
    ctx.set("Cache-Control", "no-store");
    ctx.body = { token: link.token, expires_at: new Date(link.expiresAt).toISOString(), url: link.url };
  });

  /**
   * The token's subscriber and tenant, acting as `portal`, with the client for
   * the audit trail. The portal charges the subscriber's budgets (the same
   * ones its page draws from); their RateLimit headers come back with its answer.
   */
  function portalCall(ctx: GatewayRouterContext) {
    const who = ctx.state.preference;
    if (!who) throw new Error("portal call without a verified preference token");
    const options = {
      ...callOptionsAs(ctx, { tenant: { accountId: who.accountId, mode: who.mode }, actor: PORTAL_ACTOR, requestId: ctx.state.requestId }, timeoutMs),
      ...forwardRateLimitHeaders(ctx),
    };
    return {
      options,
      subscriberId: who.subscriberId,
      client: { ip: context.clientIp(ctx), userAgent: ctx.get("user-agent").slice(0, 512) },
    };
  }

  /** A subscriber erased meanwhile: their token died with them. */
  async function asPortal<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (ConnectError.from(err).code === Code.Unauthenticated) {
        throw new Problem("invalid_preference_token", "The preference token is not valid: its subscriber no longer exists. Ask for a new link.", {
          headers: { "WWW-Authenticate": `${PREFERENCE_CHALLENGE}, error="invalid_token"` },
        });
      }
      throw err;
    }
  }

  const settingsClient = portalTransport && createClient(portal.PortalSettingsService, portalTransport);
  const settingsService = () => requireClient(settingsClient, "portal");
  const settingsJson = (s: portal.PortalSettings | undefined) => ({
    frame_ancestors: s?.frameAncestors ?? [],
    sender_name: s?.senderName ? s.senderName : null,
    logo_url: s?.logoUrl ? s.logoUrl : null,
    brand_color: s?.brandColor ? s.brandColor : null,
    updated_at: s?.updatedAt ? rfc3339(s.updatedAt, "updated_at") : null,
  });

  defineRoute(kit, "get", "/api/v1/portal-settings", "getPortalSettings", async (ctx) => {
    ctx.body = settingsJson((await settingsService().getPortalSettings({}, callOptions(ctx, timeoutMs))).settings);
  });

  defineRoute(kit, "patch", "/api/v1/portal-settings", "updatePortalSettings", async (ctx) => {
    const body = ctx.state.body as PortalSettingsUpdateBody;
    // Only the fields given change (the mask names them).
    const paths = (["frame_ancestors", "sender_name", "logo_url", "brand_color"] as const).filter((field) => body[field] !== undefined);
    const res = await settingsService().updatePortalSettings(
      {
        frameAncestors: body.frame_ancestors ?? [],
        senderName: body.sender_name ?? "",
        logoUrl: body.logo_url ?? "",
        brandColor: body.brand_color ?? "",
        updateMask: { paths: [...paths] },
      },
      callOptions(ctx, timeoutMs),
    );
    // The one-click pages of this gateway name the sender from now on.
    context.senderNames.forget(ctx.state.auth!);
    ctx.body = settingsJson(res.settings);
  });

  defineRoute(kit, "get", "/api/v1/preference-center", "getPreferenceCenter", async (ctx) => {
    const { options, subscriberId } = portalCall(ctx);
    ctx.set("Cache-Control", "no-store");
    ctx.body = preferencesJson((await asPortal(() => service().getPreferences({ subscriberId }, options))).preferences);
  });

  defineRoute(kit, "post", "/api/v1/preference-center/tags/:tag_id/subscribe", "subscribePreferenceTag", async (ctx) => {
    const { options, subscriberId, client } = portalCall(ctx);
    const res = await asPortal(() => service().subscribeTag({ subscriberId, tagId: ctx.params.tag_id ?? "", client }, options));
    ctx.body = preferencesJson(res.preferences);
  });

  defineRoute(kit, "post", "/api/v1/preference-center/tags/:tag_id/unsubscribe", "unsubscribePreferenceTag", async (ctx) => {
    const { options, subscriberId, client } = portalCall(ctx);
    const res = await asPortal(() => service().unsubscribeTag({ subscriberId, tagId: ctx.params.tag_id ?? "", client }, options));
    ctx.body = preferencesJson(res.preferences);
  });

  defineRoute(kit, "put", "/api/v1/preference-center/locale", "setPreferenceLocale", async (ctx) => {
    const { options, subscriberId, client } = portalCall(ctx);
    const body = ctx.state.body as { locale: string | null };
    ctx.body = preferencesJson((await asPortal(() => service().setLocale({ subscriberId, locale: body.locale ?? "", client }, options))).preferences);
  });

  /** The export as the portal assembles it; `Content-Disposition` makes a browser save it. */
  function sendExport(ctx: GatewayRouterContext, json: string): void {
    ctx.set("Cache-Control", "no-store");
    ctx.set("Content-Disposition", 'attachment; filename="subscriber-export.json"');
    ctx.type = "application/json";
    ctx.body = json;
  }

  defineRoute(kit, "get", "/api/v1/preference-center/export", "exportPreferenceData", async (ctx) => {
    const { options, subscriberId, client } = portalCall(ctx);
    const res = await asPortal(() => service().exportData({ subscriberId, audit: { source: "portal", ip: client.ip, userAgent: client.userAgent } }, options));
    sendExport(ctx, res.json);
  });

  defineRoute(kit, "get", "/api/v1/subscribers/:id/export", "exportSubscriber", async (ctx) => {
    const id = ctx.params.id ?? "";
    if (!isId("sub", id)) throw new Problem("not_found", "subscriber not found");
    try {
      const res = await service().exportData({ subscriberId: id, audit: requestAudit(ctx, "api", context.clientIp) }, callOptions(ctx, timeoutMs));
      sendExport(ctx, res.json);
    } catch (err) {
      // The portal answers an unknown subscriber as a dead token; to an integrator it is a 404.
      if (ConnectError.from(err).code === Code.Unauthenticated) throw new Problem("not_found", "subscriber not found");
      throw err;
    }
  });

  defineRoute(kit, "post", "/api/v1/preference-center/unsubscribe-all", "unsubscribeAllPreferences", async (ctx) => {
    const { options, subscriberId, client } = portalCall(ctx);
    ctx.body = preferencesJson((await asPortal(() => service().unsubscribeAll({ subscriberId, client }, options))).preferences);
  });

  defineRoute(kit, "delete", "/api/v1/preference-center/account", "deletePreferenceAccount", async (ctx) => {
    const { options, subscriberId, client } = portalCall(ctx);
    await asPortal(() => service().eraseAccount({ subscriberId, client }, options));
    ctx.status = 204;
  });
}
