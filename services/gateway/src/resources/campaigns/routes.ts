import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { campaigns } from "@emailsvc/proto";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor, timestampFromRfc3339 } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { campaignJson, filterFromJson } from "./mapping.js";
import type { CampaignCreateBody, CampaignSendBody, CampaignUpdateBody, RecipientCountBody } from "./schemas.js";

/**
 * /api/v1/campaigns: REST in, CampaignService calls out. Without the service
 * (CAMPAIGNS_URL not configured) every route answers 503 `service_unavailable`
 * once the caller is authenticated and the request is valid.
 */
export function campaignRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("campaigns");
  const client = transport && createClient(campaigns.CampaignService, transport);
  const service = () => requireClient(client, "campaigns");
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/campaigns", "createCampaign", async (ctx) => {
    const body = ctx.state.body as CampaignCreateBody;
    const res = await service().createCampaign(
      { name: body.name, templateId: body.template_id, tagFilter: filterFromJson(body.tag_filter) },
      callOptions(ctx, timeoutMs),
    );
    ctx.status = 201;
    ctx.body = campaignJson(res.campaign);
  });

  defineRoute(kit, "get", "/api/v1/campaigns", "listCampaigns", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listCampaigns({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.campaigns.map(campaignJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "post", "/api/v1/campaigns/recipient-count", "countRecipientsOfFilter", async (ctx) => {
    const body = ctx.state.body as RecipientCountBody;
    const res = await service().countRecipients(
      { target: { case: "tagFilter", value: filterFromJson(body.tag_filter) } },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = { count: Number(res.count) };
  });

  defineRoute(kit, "get", "/api/v1/campaigns/:id", "getCampaign", async (ctx) => {
    const res = await service().getCampaign({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = campaignJson(res.campaign);
  });

  defineRoute(kit, "patch", "/api/v1/campaigns/:id", "updateCampaign", async (ctx) => {
    const body = ctx.state.body as CampaignUpdateBody;
    const res = await service().updateCampaign(
      {
        id: ctx.params.id ?? "",
        name: body.name,
        templateId: body.template_id,
        ...(body.tag_filter ? { tagFilter: filterFromJson(body.tag_filter) } : {}),
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = campaignJson(res.campaign);
  });

  defineRoute(kit, "delete", "/api/v1/campaigns/:id", "deleteCampaign", async (ctx) => {
    await service().deleteCampaign({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  defineRoute(kit, "get", "/api/v1/campaigns/:id/recipient-count", "countRecipients", async (ctx) => {
    const res = await service().countRecipients({ target: { case: "campaignId", value: ctx.params.id ?? "" } }, callOptions(ctx, timeoutMs));
    ctx.body = { count: Number(res.count) };
  });

  defineRoute(kit, "post", "/api/v1/campaigns/:id/send", "sendCampaign", async (ctx) => {
    // The body is optional: none, `{}` and `{"send_at": …}` are all a send.
    const body = (ctx.state.body ?? {}) as CampaignSendBody;
    const res = await service().sendCampaign(
      { id: ctx.params.id ?? "", ...(body.send_at !== undefined ? { sendAt: sendAtOf(body.send_at) } : {}) },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = campaignJson(res.campaign);
  });

  defineRoute(kit, "post", "/api/v1/campaigns/:id/pause", "pauseCampaign", async (ctx) => {
    const res = await service().pauseCampaign({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = campaignJson(res.campaign);
  });

  defineRoute(kit, "post", "/api/v1/campaigns/:id/resume", "resumeCampaign", async (ctx) => {
    const res = await service().resumeCampaign({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = campaignJson(res.campaign);
  });

  defineRoute(kit, "post", "/api/v1/campaigns/:id/cancel", "cancelCampaign", async (ctx) => {
    const res = await service().cancelCampaign({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = campaignJson(res.campaign);
  });
}

/**
 * The instant of a `send_at` (validated against the document). One before
 * 1970 is past like any other and sends at once, as documented; it goes to
 * the service as the epoch, since the campaigns service takes no earlier time.
 */
function sendAtOf(text: string) {
  const at = timestampFromRfc3339(text);
  return at.seconds < 0n ? create(TimestampSchema, { seconds: 0n, nanos: 0 }) : at;
}
