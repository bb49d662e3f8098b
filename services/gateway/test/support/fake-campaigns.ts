// An in-memory stand-in for the campaigns service, served over
// createRouterTransport. It follows the contract of CampaignService where the
// gateway can tell (tenant from headers, AppErrors with ErrorDetail, a send
// only of a draft, pause/resume/cancel only from the states that allow them,
// 409s naming the state) and keeps the rest a toy: every campaign's audience
// is `audienceSize` recipients, snapshotted at once, all pending.

import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { campaigns, health } from "@emailsvc/proto";
import { AppError, notFound } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { FakeService } from "./fake-service";
import { paginate } from "./fake-subscribers";

const { CampaignStatus, CampaignSchema, RecipientCountsSchema, SkippedCountsSchema } = campaigns;

interface Tenant {
  campaigns: campaigns.Campaign[];
}

const NAMES: Record<campaigns.CampaignStatus, string> = {
  [CampaignStatus.UNSPECIFIED]: "draft",
  [CampaignStatus.DRAFT]: "draft",
  [CampaignStatus.SCHEDULED]: "scheduled",
  [CampaignStatus.SENDING]: "sending",
  [CampaignStatus.PAUSED]: "paused",
  [CampaignStatus.SENT]: "sent",
  [CampaignStatus.CANCELLED]: "cancelled",
  [CampaignStatus.FAILED]: "failed",
};

const TRANSITIONS = {
  pause: { from: [CampaignStatus.SENDING], to: CampaignStatus.PAUSED, verb: "paused", needs: "sending" },
  resume: { from: [CampaignStatus.PAUSED], to: CampaignStatus.SENDING, verb: "resumed", needs: "paused" },
  cancel: {
    from: [CampaignStatus.SCHEDULED, CampaignStatus.SENDING, CampaignStatus.PAUSED],
    to: CampaignStatus.CANCELLED,
    verb: "cancelled",
    needs: "scheduled, sending or paused",
  },
} as const;

export class FakeCampaigns extends FakeService<Tenant> {
  /** Recipients every campaign's audience has when it starts sending. */
  audienceSize = 3;
  /** The template version pinned when a campaign starts sending. */
  templateVersion = 2;
  /** The service's clock. */
  now = () => new Date();

  protected newTenant(): Tenant {
    return { campaigns: [] };
  }

  /** Sets a stored campaign's fields (e.g. a status the fake never reaches alone), in every tenant holding it. */
  force(id: string, fields: Partial<campaigns.Campaign>): void {
    for (const tenant of this.allTenants()) {
      const found = tenant.campaigns.find((c) => c.id === id);
      if (found) Object.assign(found, fields);
    }
  }

  routes(): (router: ConnectRouter) => void {
    return (router) => {
      router.service(campaigns.CampaignService, {
        createCampaign: (req, ctx) =>
          this.handle("createCampaign", ctx, (t) => {
            const at = timestampFromDate(this.now());
            const campaign = create(CampaignSchema, {
              id: newId("cmp"),
              name: req.name,
              templateId: req.templateId,
              tagFilter: req.tagFilter,
              status: CampaignStatus.DRAFT,
              createdAt: at,
              updatedAt: at,
              counts: create(RecipientCountsSchema, { skippedByReason: create(SkippedCountsSchema, {}) }),
            });
            t.campaigns.push(campaign);
            return { campaign };
          }),
        getCampaign: (req, ctx) => this.handle("getCampaign", ctx, (t) => ({ campaign: this.find(t, req.id) })),
        listCampaigns: (req, ctx) =>
          this.handle("listCampaigns", ctx, (t) => {
            const { items, nextCursor } = paginate(t.campaigns, req.limit, req.cursor);
            return { campaigns: items, nextCursor };
          }),
        sendCampaign: (req, ctx) =>
          this.handle("sendCampaign", ctx, (t) => {
            const campaign = this.find(t, req.id);
            if (campaign.status !== CampaignStatus.DRAFT) {
              throw new AppError("conflict", "campaign_not_draft", `the campaign is ${NAMES[campaign.status]}; only a draft can be sent`);
            }
            const now = this.now();
            if (req.sendAt && timestampDate(req.sendAt).getTime() < 0) {
              throw new AppError("invalid", "validation_failed", "send_at is not a valid time", {
                fieldViolations: [{ field: "send_at", description: "is not a valid time" }],
              });
            }
            campaign.updatedAt = timestampFromDate(now);
            if (req.sendAt && timestampDate(req.sendAt) > now) {
              campaign.status = CampaignStatus.SCHEDULED;
              campaign.sendAt = req.sendAt;
              return { campaign };
            }
            campaign.status = CampaignStatus.SENDING;
            campaign.startedAt = timestampFromDate(now);
            campaign.templateVersion = this.templateVersion;
            const total = BigInt(this.audienceSize);
            campaign.counts = create(RecipientCountsSchema, {
              total,
              pending: total,
              snapshotComplete: true,
              skippedByReason: create(SkippedCountsSchema, {}),
            });
            return { campaign };
          }),
        pauseCampaign: (req, ctx) => this.handle("pauseCampaign", ctx, (t) => ({ campaign: this.transition(t, req.id, "pause") })),
        resumeCampaign: (req, ctx) => this.handle("resumeCampaign", ctx, (t) => ({ campaign: this.transition(t, req.id, "resume") })),
        cancelCampaign: (req, ctx) => this.handle("cancelCampaign", ctx, (t) => ({ campaign: this.transition(t, req.id, "cancel") })),
      });
      router.service(health.Health, this.healthImpl());
    };
  }

  private find(t: Tenant, id: string): campaigns.Campaign {
    const campaign = t.campaigns.find((c) => c.id === id);
    if (!campaign) throw notFound("campaign");
    return campaign;
  }

  private transition(t: Tenant, id: string, action: keyof typeof TRANSITIONS): campaigns.Campaign {
    const campaign = this.find(t, id);
    const { from, to, verb, needs } = TRANSITIONS[action];
    if (!(from as readonly campaigns.CampaignStatus[]).includes(campaign.status)) {
      throw new AppError("conflict", "campaign_state_conflict", `the campaign is ${NAMES[campaign.status]}; only a ${needs} campaign can be ${verb}`);
    }
    const now: Timestamp = timestampFromDate(this.now());
    campaign.status = to;
    campaign.updatedAt = now;
    if (to === CampaignStatus.CANCELLED) {
      campaign.finishedAt = now;
      const counts = campaign.counts ?? create(RecipientCountsSchema, { skippedByReason: create(SkippedCountsSchema, {}) });
      // Everyone not yet handed to the provider is skipped.
      const moved = counts.pending + counts.queued;
      counts.pending = 0n;
      counts.queued = 0n;
      counts.skipped += moved;
      const by = counts.skippedByReason ?? create(SkippedCountsSchema, {});
      by.cancelled += moved;
      counts.skippedByReason = by;
      campaign.counts = counts;
    }
    return campaign;
  }
}
