import { FINISHED, stateConflict, TRANSITIONS, type CampaignStatus, type CampaignView, type Transition } from "../domain/campaign.js";
import { published, statusUpdate } from "./campaign-status.js";
import { loadCampaign, type Deps, type Scope } from "./deps.js";
import { moveRows } from "./ledger.js";
import { campaignView } from "./views.js";

/**
 * Pause, resume or cancel: a guarded change of status; another state is a 409
 * naming it. The answer is the campaign as this call's own write left it
 * (never a later call's: concurrent pauses and resumes each see their own).
 */
export async function changeCampaignState(deps: Deps, scope: Scope, input: { id: string; action: Transition }): Promise<CampaignView> {
  const current = await loadCampaign(scope, input.id);
  const { from, to } = TRANSITIONS[input.action];
  if (!(from as readonly CampaignStatus[]).includes(current.status)) throw stateConflict(current.status, input.action);
  const now = deps.now();
  const finishing = (FINISHED as readonly CampaignStatus[]).includes(to);
  const doc = await scope.campaigns.updateOne(
    { _id: input.id, status: { $in: [...from] } },
    statusUpdate(to, now, finishing ? { finished_at: now, lease_until: 0 } : {}),
  );
  if (!doc) throw stateConflict((await loadCampaign(scope, input.id)).status, input.action);
  await published(deps, doc);
  if (to === "cancelled") {
    // Everyone not yet handed to the provider is skipped. Rows handed to
    // delivery are skipped too: delivery has the cancellation (the event
    // above) and sends none it has not given to the provider yet; one it had
    // is recorded as sent when its status arrives. Cancelled is final, so the
    // campaign read again after these moves is still this write's.
    // The position is read after the status write, which no hand-over passes (it is guarded by the
    // status), and goes once every row it bounds is skipped: it would name a subscriber for ever.
    await moveRows(scope, doc._id, undefined, "pending", "skipped.cancelled", now);
    await moveRows(scope, doc._id, undefined, "queued", "skipped.cancelled", now);
    await scope.campaigns.updateOne({ _id: input.id, status: "cancelled" }, { $set: { handed_up_to: "" } });
    return campaignView((await scope.campaigns.findOne({ _id: input.id })) ?? doc);
  }
  if (to === "sending") deps.wake?.();
  return campaignView(doc);
}
