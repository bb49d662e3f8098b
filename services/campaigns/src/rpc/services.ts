import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { AudienceFilterSchema, campaigns } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import { invalid } from "@emailsvc/errors";
import type { CampaignStatus, CampaignView } from "../domain/campaign.js";
import { changeCampaignState } from "../usecases/change-campaign-state.js";
import { countRecipients } from "../usecases/count-recipients.js";
import { createCampaign } from "../usecases/create-campaign.js";
import { deleteCampaign } from "../usecases/delete-campaign.js";
import { getCampaign } from "../usecases/get-campaign.js";
import { listCampaigns } from "../usecases/list-campaigns.js";
import { listTemplateUsers } from "../usecases/list-template-users.js";
import { sendCampaign } from "../usecases/send-campaign.js";
import { updateCampaign } from "../usecases/update-campaign.js";
import { exportSubscriberCampaigns } from "../usecases/export-subscriber.js";
import type { Deps, Scope } from "../usecases/deps.js";

const STATUS_TO_PROTO: Record<CampaignStatus, campaigns.CampaignStatus> = {
  draft: campaigns.CampaignStatus.DRAFT,
  scheduled: campaigns.CampaignStatus.SCHEDULED,
  sending: campaigns.CampaignStatus.SENDING,
  paused: campaigns.CampaignStatus.PAUSED,
  sent: campaigns.CampaignStatus.SENT,
  cancelled: campaigns.CampaignStatus.CANCELLED,
  failed: campaigns.CampaignStatus.FAILED,
};

const STATUS_FROM_PROTO = new Map(Object.entries(STATUS_TO_PROTO).map(([status, proto]) => [proto, status as CampaignStatus]));

function campaignToProto(view: CampaignView): campaigns.Campaign {
  return create(campaigns.CampaignSchema, {
    id: view.id,
    name: view.name,
    templateId: view.templateId,
    tagFilter: fromJson(AudienceFilterSchema, view.tagFilter as JsonValue),
    status: STATUS_TO_PROTO[view.status],
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
    ...(view.sendAt !== null ? { sendAt: timestampFromMs(view.sendAt) } : {}),
    ...(view.startedAt !== null ? { startedAt: timestampFromMs(view.startedAt) } : {}),
    ...(view.finishedAt !== null ? { finishedAt: timestampFromMs(view.finishedAt) } : {}),
    failureReason: view.failureReason,
    templateVersion: view.templateVersion,
    counts: {
      total: BigInt(view.counts.total),
      pending: BigInt(view.counts.pending),
      queued: BigInt(view.counts.queued),
      sent: BigInt(view.counts.sent),
      failed: BigInt(view.counts.failed),
      skipped: BigInt(Object.values(view.counts.skipped).reduce((a, b) => a + b, 0)),
      skippedByReason: {
        unsubscribed: BigInt(view.counts.skipped.unsubscribed),
        erased: BigInt(view.counts.skipped.erased),
        suppressed: BigInt(view.counts.skipped.suppressed),
        cancelled: BigInt(view.counts.skipped.cancelled),
      },
      snapshotComplete: view.snapshotComplete,
    },
  });
}

/** Registers CampaignService: proto in, use case, proto out. `scopeOf` gives a call its tenant's collections. */
export function campaignRoutes(deps: Deps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  return (router) => {
    router.service(campaigns.CampaignService, {
      async createCampaign(req, ctx) {
        const view = await createCampaign(deps, scopeOf(readCallContext(ctx)), { name: req.name, templateId: req.templateId, tagFilter: req.tagFilter });
        return { campaign: campaignToProto(view) };
      },
      async getCampaign(req, ctx) {
        return { campaign: campaignToProto(await getCampaign(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listCampaigns(req, ctx) {
        const statuses = req.statuses.map((status) => {
          const found = STATUS_FROM_PROTO.get(status);
          if (!found) throw invalid("statuses holds an unknown status", [{ field: "statuses", description: "must be campaign statuses" }]);
          return found;
        });
        const page = await listCampaigns(scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor, statuses });
        return { campaigns: page.items.map(campaignToProto), nextCursor: page.nextCursor };
      },
      async updateCampaign(req, ctx) {
        const view = await updateCampaign(deps, scopeOf(readCallContext(ctx)), {
          id: req.id,
          name: req.name,
          templateId: req.templateId,
          tagFilter: req.tagFilter,
        });
        return { campaign: campaignToProto(view) };
      },
      async deleteCampaign(req, ctx) {
        await deleteCampaign(scopeOf(readCallContext(ctx)), req.id);
        return {};
      },
      async sendCampaign(req, ctx) {
        const sendAt = req.sendAt ? timestampDate(req.sendAt).getTime() : undefined;
        return { campaign: campaignToProto(await sendCampaign(deps, scopeOf(readCallContext(ctx)), { id: req.id, sendAt })) };
      },
      async pauseCampaign(req, ctx) {
        return { campaign: campaignToProto(await changeCampaignState(deps, scopeOf(readCallContext(ctx)), { id: req.id, action: "pause" })) };
      },
      async resumeCampaign(req, ctx) {
        return { campaign: campaignToProto(await changeCampaignState(deps, scopeOf(readCallContext(ctx)), { id: req.id, action: "resume" })) };
      },
      async cancelCampaign(req, ctx) {
        return { campaign: campaignToProto(await changeCampaignState(deps, scopeOf(readCallContext(ctx)), { id: req.id, action: "cancel" })) };
      },
      async countRecipients(req, ctx) {
        const scope = scopeOf(readCallContext(ctx));
        const target = req.target.case === "campaignId" ? { campaignId: req.target.value } : { tagFilter: req.target.value };
        return { count: BigInt(await countRecipients(deps, scope, target)) };
      },
      async exportSubscriberData(req, ctx) {
        return { json: await exportSubscriberCampaigns(scopeOf(readCallContext(ctx)), req.subscriberId) };
      },
      async listTemplateUsers(req, ctx) {
        return listTemplateUsers(scopeOf(readCallContext(ctx)), req.templateId);
      },
    });
  };
}
