import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { campaigns, delivery } from "@emailsvc/proto";
import { Problem } from "../../http/problem.js";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { campaignJson } from "../campaigns/mapping.js";
import type { ResourceContext } from "../resource.js";
import { OVERVIEW_STATUSES } from "./schemas.js";
import { isTimeZone, periodStarts } from "./zone.js";

type Status = (typeof OVERVIEW_STATUSES)[number];

const STATUS_OF: Partial<Record<delivery.EmailStatus, Status>> = {
  [delivery.EmailStatus.QUEUED]: "queued",
  [delivery.EmailStatus.SENT]: "sent",
  [delivery.EmailStatus.DELIVERED]: "delivered",
  [delivery.EmailStatus.DEFERRED]: "deferred",
  [delivery.EmailStatus.BOUNCED]: "bounced",
  [delivery.EmailStatus.COMPLAINED]: "complained",
  [delivery.EmailStatus.FAILED]: "failed",
  [delivery.EmailStatus.SUPPRESSED]: "suppressed",
};

function countsJson(res: delivery.CountEmailsResponse): { total: number; counts: Record<Status, number> } {
  const counts = Object.fromEntries(OVERVIEW_STATUSES.map((s) => [s, 0])) as Record<Status, number>;
  for (const { status, count } of res.counts) {
    const name = STATUS_OF[status];
    if (name) counts[name] += Number(count);
  }
  return { total: Object.values(counts).reduce((a, b) => a + b, 0), counts };
}

const ratio = (part: number, whole: number) => (whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000);

export function overviewRoutes(kit: RouteKit, context: ResourceContext): void {
  const deliveryTransport = context.transport("delivery");
  const campaignsTransport = context.transport("campaigns");
  const deliveryClient = deliveryTransport && createClient(delivery.DeliveryService, deliveryTransport);
  const campaignsClient = campaignsTransport && createClient(campaigns.CampaignService, campaignsTransport);

  defineRoute(kit, "get", "/api/v1/overview", "getOverview", async (ctx) => {
    const tz = (ctx.state.query as { tz: string }).tz;
    if (!isTimeZone(tz)) throw new Problem("validation_failed", `${tz} is not a time zone this server knows.`, { errors: [{ field: "tz", message: "is not a known IANA time zone" }] });
    const starts = periodStarts(tz, Date.now());
    const sends = requireClient(deliveryClient, "delivery");
    const [today, month, running] = await Promise.all([
      sends.countEmails({ since: timestampFromMs(starts.today) }, callOptions(ctx, context.timeoutMs)),
      sends.countEmails({ since: timestampFromMs(starts.month) }, callOptions(ctx, context.timeoutMs)),
      requireClient(campaignsClient, "campaigns").listCampaigns(
        { limit: 50, cursor: "", statuses: [campaigns.CampaignStatus.SENDING, campaigns.CampaignStatus.PAUSED] },
        callOptions(ctx, context.timeoutMs),
      ),
    ]);
    const monthCounts = countsJson(month);
    const c = monthCounts.counts;
    const handed = c.sent + c.delivered + c.deferred + c.bounced + c.complained;
    ctx.body = {
      tz,
      today: { since: new Date(starts.today).toISOString(), ...countsJson(today) },
      month: { since: new Date(starts.month).toISOString(), ...monthCounts },
      bounce_rate: ratio(c.bounced, handed),
      complaint_rate: ratio(c.complained, handed),
      running_campaigns: running.campaigns.map(campaignJson),
    };
  });
}
