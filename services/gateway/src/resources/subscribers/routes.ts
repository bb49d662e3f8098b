import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { SubscriberService } from "@emailsvc/proto";
import { callOptions, requestAudit } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { statusFromJson, subscriberEventJson, subscriberJson } from "./mapping.js";
import type { AudienceSettingsUpdateBody, SubscriberCreateBody, SubscriberTagsAddBody, SubscriberUpdateBody } from "./schemas.js";
import type { AudienceSettings } from "@emailsvc/proto";

/** /api/v1/subscribers: REST in, SubscriberService calls out. */
export function subscriberRoutes(kit: RouteKit, context: ResourceContext): void {
  // The subscribers service is required: the gateway does not start without it.
  const transport = context.transport("subscribers");
  if (!transport) throw new Error("the subscriber routes need the subscribers service");
  const subscribers = createClient(SubscriberService, transport);
  const { timeoutMs } = context;
  // Every change made through these routes is audited as coming from the API, with the client's address and user agent.
  const audit = (ctx: Parameters<typeof callOptions>[0]) => requestAudit(ctx, "api", context.clientIp);

  defineRoute(kit, "post", "/api/v1/subscribers", "createSubscriber", async (ctx) => {
    const body = ctx.state.body as SubscriberCreateBody;
    const res = await subscribers.createSubscriber(
      {
        email: body.email,
        tags: body.tags ?? [],
        metadata: body.metadata as JsonObject | undefined,
        status: statusFromJson(body.status),
        locale: body.locale ?? "",
        resubscribe: body.resubscribe ?? false,
        resubscribeReason: body.resubscribe_reason ?? "",
        doubleOptIn: body.double_opt_in ?? false,
        ...(body.consent ? { consent: { text: body.consent.text ?? "", version: body.consent.version ?? "", sourceId: body.consent.source_id ?? "" } } : {}),
        audit: audit(ctx),
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.status = 201;
    ctx.body = subscriberJson(res.subscriber);
  });

  defineRoute(kit, "get", "/api/v1/subscribers", "listSubscribers", async (ctx) => {
    const query = ctx.state.query as { limit: number; status?: string; email?: string; tag?: string; cursor?: string };
    const res = await subscribers.listSubscribers(
      { limit: query.limit, status: statusFromJson(query.status), cursor: query.cursor ?? "", emailPrefix: query.email ?? "", tag: query.tag ?? "" },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = { items: res.subscribers.map(subscriberJson), next_cursor: nextCursor(res.nextCursor) };
  });

  // Registered before /{id}/events so that an address like "events" is looked up by email.
  defineRoute(kit, "get", "/api/v1/subscribers/by-email/:email", "getSubscriberByEmail", async (ctx) => {
    // The router has URL-decoded the parameter.
    const res = await subscribers.getSubscriberByEmail({ email: ctx.params.email ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = subscriberJson(res.subscriber);
  });

  defineRoute(kit, "get", "/api/v1/subscribers/:id", "getSubscriber", async (ctx) => {
    const res = await subscribers.getSubscriber({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = subscriberJson(res.subscriber);
  });

  defineRoute(kit, "patch", "/api/v1/subscribers/:id", "updateSubscriber", async (ctx) => {
    const body = ctx.state.body as SubscriberUpdateBody;
    const res = await subscribers.updateSubscriber(
      {
        id: ctx.params.id ?? "",
        email: body.email,
        status: statusFromJson(body.status),
        metadata: body.metadata as JsonObject | undefined,
        // null and "" both unset it; absent leaves it.
        locale: body.locale === null ? "" : body.locale,
        audit: audit(ctx),
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = subscriberJson(res.subscriber);
  });

  defineRoute(kit, "delete", "/api/v1/subscribers/:id", "deleteSubscriber", async (ctx) => {
    await subscribers.deleteSubscriber({ id: ctx.params.id ?? "", audit: audit(ctx) }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/subscribers/:id/tags", "addSubscriberTags", async (ctx) => {
    const body = ctx.state.body as SubscriberTagsAddBody;
    const res = await subscribers.addTags({ subscriberId: ctx.params.id ?? "", tags: body.tags, audit: audit(ctx) }, callOptions(ctx, timeoutMs));
    ctx.body = subscriberJson(res.subscriber);
  });

  defineRoute(kit, "delete", "/api/v1/subscribers/:id/tags/:tag_name", "removeSubscriberTag", async (ctx) => {
    const res = await subscribers.removeTag(
      { subscriberId: ctx.params.id ?? "", tagName: ctx.params.tag_name ?? "", audit: audit(ctx) },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = subscriberJson(res.subscriber);
  });

  defineRoute(kit, "get", "/api/v1/subscribers/:id/events", "listSubscriberEvents", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await subscribers.listSubscriberEvents(
      { subscriberId: ctx.params.id ?? "", limit: query.limit, cursor: query.cursor ?? "" },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = { items: res.events.map(subscriberEventJson), next_cursor: nextCursor(res.nextCursor) };
  });

  const settingsJson = (s: AudienceSettings | undefined) => {
    if (!s) throw new Error("the service returned no settings");
    return {
      double_opt_in: s.doubleOptIn,
      double_opt_in_for_api: s.doubleOptInForApi,
      confirmation_expiry_seconds: s.confirmationExpirySeconds,
      confirmation_template: s.confirmationTemplate || null,
    };
  };

  defineRoute(kit, "get", "/api/v1/audience-settings", "getAudienceSettings", async (ctx) => {
    ctx.body = settingsJson((await subscribers.getAudienceSettings({}, callOptions(ctx, timeoutMs))).settings);
  });

  defineRoute(kit, "patch", "/api/v1/audience-settings", "updateAudienceSettings", async (ctx) => {
    const body = ctx.state.body as AudienceSettingsUpdateBody;
    const res = await subscribers.updateAudienceSettings(
      {
        ...(body.double_opt_in !== undefined ? { doubleOptIn: body.double_opt_in } : {}),
        ...(body.double_opt_in_for_api !== undefined ? { doubleOptInForApi: body.double_opt_in_for_api } : {}),
        ...(body.confirmation_expiry_seconds !== undefined ? { confirmationExpirySeconds: body.confirmation_expiry_seconds } : {}),
        // null: back to the platform's own mail.
        ...(body.confirmation_template !== undefined ? { confirmationTemplate: body.confirmation_template ?? "" } : {}),
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = settingsJson(res.settings);
  });
}
