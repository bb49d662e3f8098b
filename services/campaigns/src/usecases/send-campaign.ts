import { withOutbox } from "@emailsvc/outbox";
import { invalid, newId, notFound } from "@emailsvc/runtime";
import type { TenantUpdate } from "@emailsvc/storage";
import {
  emptyCounts,
  FINISHED,
  notDraft,
  stateConflict,
  templateNotFound,
  TRANSITIONS,
  type CampaignStatus,
  type CampaignView,
  type Transition,
} from "../domain/campaign.js";
import type { CampaignDoc, CampaignOutboxEntry, RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { filterOf } from "./campaigns.js";
import { campaignCall, campaignView, type Deps, type Scope } from "./deps.js";
import { moveRows, rowId } from "./ledger.js";

// Sending a campaign: start (at once or scheduled), the audience snapshot into
// the ledger, and the integrator's pause, resume and cancel. The dispatcher
// (messaging/dispatcher.ts) hands the snapshotted recipients to delivery.

/** Subscriber ids per AudienceService page while snapshotting (its maximum). */
export const SNAPSHOT_PAGE = 5000;

/** A change of status with its campaign.status_changed entry, in one write. */
export function statusUpdate(status: CampaignStatus, now: number, set: Partial<CampaignDoc> = {}): TenantUpdate<CampaignDoc> {
  const entry: CampaignOutboxEntry = { id: newId("evt"), at: now, status };
  return withOutbox<CampaignDoc, CampaignOutboxEntry>({ $set: { ...set, status } }, [entry], now);
}

async function load(scope: Pick<TenantRepositories, "campaigns">, id: string): Promise<CampaignDoc> {
  const doc = id ? await scope.campaigns.findOne({ _id: id }) : null;
  if (!doc) throw notFound("campaign");
  return doc;
}

async function published(deps: Deps, doc: CampaignDoc): Promise<CampaignDoc> {
  await deps.relay?.afterWrite(doc);
  return doc;
}

/**
 * Starts a draft. With a `sendAt` in the future it is `scheduled` (the
 * dispatcher starts it then); otherwise it is `sending` at once: the template
 * version is pinned, the audience is copied into the ledger for up to the
 * snapshot budget, and the answer carries the total (final once
 * `snapshotComplete`; a larger audience is finished by the dispatcher).
 */
export async function sendCampaign(deps: Deps, scope: Scope, input: { id: string; sendAt: number | undefined }): Promise<CampaignView> {
  const current = await load(scope, input.id);
  if (current.status !== "draft") throw notDraft(current.status, "sent");
  const now = deps.now();
  if (input.sendAt !== undefined && !Number.isFinite(input.sendAt)) {
    throw invalid("send_at is not a valid time", [{ field: "send_at", description: "is not a valid time" }]);
  }
  await chargeTestMode(deps, scope, current);
  if (input.sendAt !== undefined && input.sendAt > now) {
    const doc = await scope.campaigns.updateOne(
      { _id: input.id, status: "draft" },
      statusUpdate("scheduled", now, { send_at: input.sendAt, counts: emptyCounts(), failure_reason: "" }),
    );
    if (!doc) throw notDraft((await load(scope, input.id)).status, "sent");
    return campaignView(await published(deps, doc));
  }
  const version = await deps.templates.currentVersion(scope.call, current.template_id);
  if (version === undefined) throw templateNotFound();
  // The request holds the dispatcher's lease while it copies the audience, so
  // the two do not copy it side by side; if the request dies, the lease runs
  // out and the dispatcher goes on from where it stopped.
  const budgetMs = deps.settings?.snapshotBudgetMs ?? 10_000;
  const owner = `request:${scope.call.requestId || newId("req")}`;
  const started = await startSending(deps, scope, current, version, "draft", { owner, until: now + budgetMs + 30_000 });
  if (!started) throw notDraft((await load(scope, input.id)).status, "sent");
  try {
    await snapshotAudience(deps, scope, started, now + budgetMs);
  } finally {
    await scope.campaigns.updateOne({ _id: input.id, lease_owner: owner }, { $set: { lease_owner: "", lease_until: 0 } });
    deps.wake?.();
  }
  return campaignView(await load(scope, input.id));
}

/**
 * In test mode, the audience as it is now counts against the account's
 * test-mode quota (TEST_MODE_DAILY_LIMIT) before anything changes: beyond it
 * the send is refused (429 `test_mode_quota_exceeded`, 403
 * `test_mode_campaign_too_large`) and the campaign stays a draft.
 */
async function chargeTestMode(deps: Deps, scope: Scope, campaign: CampaignDoc): Promise<void> {
  if (!deps.testModeQuota || scope.call.tenant.mode !== "test") return;
  const recipients = await deps.audiences.count(scope.call, filterOf(campaign));
  await deps.testModeQuota.charge(campaign.tenant, recipients);
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
      failure_reason: "",
      lease_owner: lease.owner,
      lease_until: lease.until,
    }),
  );
  return doc && published(deps, doc);
}

/**
 * Copies the campaign's audience into the ledger, a page of AudienceService
 * at a time, from where the last copy stopped (`snapshot_after`), until it is
 * complete or `deadline` (ms) passes. Each page is inserted with insertMany
 * (rows already there, from a copy a crash interrupted, are skipped), then
 * the resume point and the counts move in one write guarded by the status:
 * a campaign cancelled meanwhile takes no more rows (the page's are removed).
 * Resolves the campaign as it is after the last page; null when it stopped
 * being sent meanwhile.
 */
export async function snapshotAudience(
  deps: Deps,
  repos: Pick<TenantRepositories, "campaigns" | "recipients">,
  campaign: CampaignDoc,
  deadline: number,
): Promise<CampaignDoc | null> {
  let doc = campaign;
  const call = campaignCall(campaign);
  const filter = filterOf(campaign);
  while (!doc.snapshot_complete) {
    const page = await deps.audiences.page(call, filter, doc.snapshot_after ?? "", SNAPSHOT_PAGE);
    const now = deps.now();
    const rows: Array<Omit<RecipientDoc, "tenant">> = page.ids.map((subscriberId) => ({
      _id: rowId(campaign._id, subscriberId),
      campaign_id: campaign._id,
      subscriber_id: subscriberId,
      email_id: newId("eml"),
      state: "pending",
      reason: "",
      updated_at: now,
    }));
    const { inserted } = rows.length > 0 ? await repos.recipients.insertMany(rows) : { inserted: 0 };
    const next = await repos.campaigns.updateOne({ _id: campaign._id, status: { $in: ["sending", "paused"] } }, {
      // A complete snapshot keeps no resume point: it would name a subscriber for as long as the campaign exists.
      $set: { snapshot_after: page.nextAfter === "" ? "" : (page.ids.at(-1) ?? doc.snapshot_after ?? ""), snapshot_complete: page.nextAfter === "", updated_at: now },
      $inc: { "counts.total": inserted, "counts.pending": inserted },
    } as unknown as TenantUpdate<CampaignDoc>);
    if (!next) {
      // Cancelled (or failed) meanwhile: this page's rows were never counted; they go.
      if (rows.length > 0) await repos.recipients.deleteMany({ _id: { $in: rows.map((r) => r._id) }, state: "pending" });
      return null;
    }
    doc = next;
    if (!doc.snapshot_complete && deps.now() >= deadline) break;
  }
  return doc;
}

/** Pause, resume or cancel: a guarded change of status; another state is a 409 naming it. */
export async function changeCampaignState(deps: Deps, scope: Scope, input: { id: string; action: Transition }): Promise<CampaignView> {
  const current = await load(scope, input.id);
  const { from, to } = TRANSITIONS[input.action];
  if (!(from as readonly CampaignStatus[]).includes(current.status)) throw stateConflict(current.status, input.action);
  const now = deps.now();
  const finishing = (FINISHED as readonly CampaignStatus[]).includes(to);
  const doc = await scope.campaigns.updateOne(
    { _id: input.id, status: { $in: [...from] } },
    statusUpdate(to, now, finishing ? { finished_at: now, lease_until: 0 } : {}),
  );
  if (!doc) throw stateConflict((await load(scope, input.id)).status, input.action);
  await published(deps, doc);
  if (to === "cancelled") {
    // Everyone not yet handed to the provider is skipped. Rows handed to
    // delivery are skipped too: delivery has the cancellation (the event
    // above) and sends none it has not given to the provider yet; one it had
    // is recorded as sent when its status arrives.
    await moveRows(scope, doc._id, {}, "pending", "skipped.cancelled", now);
    await moveRows(scope, doc._id, {}, "queued", "skipped.cancelled", now);
  }
  if (to === "sending") deps.wake?.();
  return campaignView((await scope.campaigns.findOne({ _id: input.id })) ?? doc);
}

/** A scheduled campaign that is due: started, or failed when it is overdue by more than the allowed age. */
export async function startDue(deps: Deps, repos: TenantRepositories, campaign: CampaignDoc): Promise<CampaignDoc | null> {
  const now = deps.now();
  const fail = async (reason: string) => {
    const doc = await repos.campaigns.updateOne({ _id: campaign._id, status: "scheduled" }, statusUpdate("failed", now, { failure_reason: reason, finished_at: now }));
    if (doc) await published(deps, doc);
    return null;
  };
  const maxAge = deps.settings?.scheduleMaxAgeMs ?? 3_600_000;
  const overdue = now - (campaign.send_at ?? now);
  if (overdue > maxAge) {
    deps.logger.warn({ campaign_id: campaign._id, overdue_ms: overdue }, "scheduled campaign missed its time by more than the allowed age; failed");
    return fail("schedule_missed");
  }
  const version = await deps.templates.currentVersion(campaignCall(campaign), campaign.template_id);
  if (version === undefined) return fail("template_not_found");
  return startSending(deps, repos, campaign, version, "scheduled");
}

/** Sending is over: every recipient has an outcome. */
export async function finishSending(deps: Deps, repos: TenantRepositories, campaign: CampaignDoc): Promise<CampaignDoc | null> {
  const now = deps.now();
  const doc = await repos.campaigns.updateOne(
    { _id: campaign._id, status: "sending" },
    statusUpdate("sent", now, { finished_at: now, lease_until: 0 }),
  );
  return doc && published(deps, doc);
}
