import { invalid } from "@emailsvc/errors";
import { checkTestModeSize } from "@emailsvc/ratelimit";
import { newId } from "@emailsvc/ids";
import { emptyCounts, notDraft, templateNotFound, type CampaignView } from "../domain/campaign.js";
import type { CampaignDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { filterOf } from "./audience-filter.js";
import { published, statusUpdate } from "./campaign-status.js";
import { loadCampaign, type Deps, type Scope } from "./deps.js";
import { snapshotAudience } from "./snapshot-audience.js";
import { campaignView } from "./views.js";

// Sending a draft: at once, or scheduled. The audience is copied into the
// ledger (snapshot-audience.ts); the dispatcher (messaging/dispatcher.ts)
// hands the recipients to delivery.

/**
 * Starts a draft. With a `sendAt` in the future it is `scheduled` (the
 * dispatcher starts it then); otherwise it is `sending` at once: the template
 * version is pinned, the audience's first page is copied into the ledger
 * (and more for up to the snapshot budget), and the answer carries the total
 * (final once `snapshotComplete`; a larger audience is finished by the
 * dispatcher, which hands over what is copied meanwhile).
 */
export async function sendCampaign(deps: Deps, scope: Scope, input: { id: string; sendAt: number | undefined }): Promise<CampaignView> {
  const current = await loadCampaign(scope, input.id);
  if (current.status !== "draft") throw notDraft(current.status, "sent");
  const now = deps.now();
  if (input.sendAt !== undefined && !Number.isFinite(input.sendAt)) {
    throw invalid("send_at is not a valid time", [{ field: "send_at", description: "is not a valid time" }]);
  }
  await refuseTooLargeForTestMode(deps, scope, current);
  if (input.sendAt !== undefined && input.sendAt > now) {
    const doc = await scope.campaigns.updateOne(
      { _id: input.id, status: "draft" },
      statusUpdate("scheduled", now, { send_at: input.sendAt, counts: emptyCounts(), failure_reason: "" }),
    );
    if (!doc) throw notDraft((await loadCampaign(scope, input.id)).status, "sent");
    return campaignView(await published(deps, doc));
  }
  const version = await deps.templates.currentVersion(scope.call, current.template_id);
  if (version === undefined) throw templateNotFound();
  // The request holds the dispatcher's lease while it copies the audience, so
  // the two do not copy it side by side; if the request dies, the lease runs
  // out and the dispatcher goes on from where it stopped.
  // Past the first page only within the budget (0 by default: the dispatcher copies the rest while it sends).
  const budgetMs = deps.settings?.snapshotBudgetMs ?? 0;
  const owner = `request:${scope.call.requestId || newId("req")}`;
  const started = await startSending(deps, scope, current, version, "draft", { owner, until: now + budgetMs + 30_000 });
  if (!started) throw notDraft((await loadCampaign(scope, input.id)).status, "sent");
  try {
    await snapshotAudience(deps, scope, started, now + budgetMs);
  } finally {
    await scope.campaigns.updateOne({ _id: input.id, lease_owner: owner }, { $set: { lease_owner: "", lease_until: 0 } });
    deps.wake?.();
  }
  return campaignView(await loadCampaign(scope, input.id));
}

/**
 * In test mode, a campaign whose audience (as it is now) is more than a whole
 * day's test-mode quota (TEST_MODE_DAILY_LIMIT) is refused before anything
 * changes (403 `test_mode_campaign_too_large`; it stays a draft). The quota
 * itself is charged as the dispatcher hands recipients to delivery (its
 * budgets, messaging/dispatcher.ts), not here: what is charged is what goes
 * out, whatever the audience becomes by a scheduled time, however many
 * requests race to send one draft, and nothing for a schedule cancelled.
 */
async function refuseTooLargeForTestMode(deps: Deps, scope: Scope, campaign: CampaignDoc): Promise<void> {
  const limit = deps.settings?.testModeDailyLimit;
  if (!limit || scope.call.tenant.mode !== "test") return;
  checkTestModeSize(limit, await deps.audiences.count(scope.call, filterOf(campaign)));
}

/**
 * Moves a campaign from `from` (draft, or scheduled when due) to sending, with
 * its template version pinned and empty counts. Null when it is no longer in
 * `from` (another request or dispatcher won).
 */
export async function startSending(
  deps: Deps,
  repos: Pick<TenantRepositories, "campaigns">,
  campaign: CampaignDoc,
  templateVersion: number,
  from: "draft" | "scheduled",
  lease: { owner: string; until: number } = { owner: "", until: 0 },
): Promise<CampaignDoc | null> {
  const now = deps.now();
  const doc = await repos.campaigns.updateOne(
    { _id: campaign._id, status: from },
    statusUpdate("sending", now, {
      template_version: templateVersion,
      started_at: now,
      counts: emptyCounts(),
      snapshot_complete: false,
      snapshot_after: "",
      handed_up_to: "",
      failure_reason: "",
      lease_owner: lease.owner,
      lease_until: lease.until,
    }),
  );
  return doc && published(deps, doc);
}
