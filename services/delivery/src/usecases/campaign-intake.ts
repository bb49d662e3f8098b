import type { EncodedEvent, EventMessage } from "@emailsvc/events";
import { newOutbox } from "@emailsvc/outbox";
import { randomBytes } from "node:crypto";
import { isId } from "@emailsvc/ids";
import { isFinal, type EmailStatus } from "../domain/email.js";
import { RECIPIENTS_PER_CALL, RecipientsUnavailableError, type AddressedRecipient } from "../domain/recipients.js";
import { TemplatesUnavailableError } from "../domain/templates.js";
import { publicError, SendFailure, type PublicErrorCode } from "../domain/provider.js";
import { refusal } from "../domain/eligibility.js";
import type { CampaignOutcomes } from "../messaging/outbox.js";
import type { EmailDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { RetryLater, type CampaignReport, type CampaignSend, type DeliveryDeps, type StatusSource } from "./deliver-email.js";
import { templateVersion } from "./prepare-message.js";
import { emailsByStatus } from "./metrics.js";
import { providerForTenant } from "./deps.js";
import { LeaseGroup } from "./lease.js";
import { OutcomeWrites } from "./outcome-writes.js";

// Campaign recipients handed over by the campaigns service
// (`email.send.requested` with a campaign_id): one event per batch of
// recipients (or, from before batches, per recipient), ids only. A window of
// them becomes email records with one recipient lookup, one
// cancelled-campaign query and one insertMany; the records are then sent one
// by one like any email (claim, render, hand-off, `sent`). An email of a
// paused campaign is held before the hand-off (deliver-email.ts): unclaimed,
// still queued, answered `held` so that campaigns hands it over again on resume.

/** One recipient of a campaign as the event names it. */
export interface CampaignRequest {
  emailId: string;
  campaignId: string;
  subscriberId: string;
  templateId: string;
  templateVersion: number;
}

/**
 * The campaign recipients a send request names: each of a batch's (the
 * campaign and template version once, then each recipient's ids), or the one
 * recipient of the form from before batches. None for an email delivery
 * stored itself (no campaign_id).
 */
export function campaignRequestsOf(message: EventMessage<"email.send.requested">): CampaignRequest[] {
  const { campaignId, templateId, templateVersion } = message;
  if (!campaignId) return [];
  if (message.recipients.length === 0) return [{ emailId: message.emailId, campaignId, subscriberId: message.subscriberId, templateId, templateVersion }];
  return message.recipients.map(({ emailId, subscriberId }) => ({ emailId, campaignId, subscriberId, templateId, templateVersion }));
}

/** An email of the batch to send now, with what the intake learnt about it. */
export interface IntakeResult {
  emailId: string;
  campaign: CampaignSend;
}

/** How long a campaign found not cancelled is believed (ms) before the store is asked again. */
const CANCEL_CHECK_MS = 250;

/**
 * Whether campaigns are cancelled, from the `cancelled_campaigns` of one
 * tenant: asked right before each hand-off, so a cancellation stops the
 * recipients not yet given to the provider within CANCEL_CHECK_MS of its
 * event. A cancellation is final, so a "yes" is kept for good.
 */
export class CancelledCampaigns {
  private readonly cancelled = new Set<string>();
  private readonly checkedAt = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  /** The answer itself while it is known (a cancellation, or a "no" younger than CANCEL_CHECK_MS), else a promise of it from the store. */
  isCancelled(scope: TenantRepositories, campaignId: string): boolean | Promise<boolean> {
    const key = `${scope.tenant}/${campaignId}`;
    if (this.cancelled.has(key)) return true;
    const at = this.checkedAt.get(key);
    const now = this.now();
    if (at !== undefined && now - at < CANCEL_CHECK_MS) return false;
    return this.ask(scope, campaignId, key, now);
  }

  private async ask(scope: TenantRepositories, campaignId: string, key: string, now: number): Promise<boolean> {
    const found = await scope.cancelledCampaigns.findOne({ _id: campaignId });
    if (found) {
      this.cancelled.add(key);
      this.checkedAt.delete(key);
      return true;
    }
    if (this.checkedAt.size > 10_000) this.checkedAt.clear();
    this.checkedAt.set(key, now);
    return false;
  }

  /** Records a cancellation (from campaign.status_changed); idempotent. */
  async record(scope: TenantRepositories, campaignId: string, at: number): Promise<void> {
    await scope.cancelledCampaigns.upsertMany([{ _id: campaignId, cancelled_at: at }]);
    this.cancelled.add(`${scope.tenant}/${campaignId}`);
  }
}

/**
 * Whether campaigns are paused, from the `paused_campaigns` of one tenant:
 * asked right before each hand-off (after the cancellation), so a pause holds
 * the recipients not yet given to the provider within CANCEL_CHECK_MS of its
 * event. A pause ends (resume, cancel), so both answers are believed for
 * CANCEL_CHECK_MS only; this process's own records count at once.
 */
export class PausedCampaigns {
  private readonly known = new Map<string, { paused: boolean; at: number }>();

  constructor(private readonly now: () => number) {}

  /** The answer itself while it is younger than CANCEL_CHECK_MS, else a promise of it from the store. */
  isPaused(scope: TenantRepositories, campaignId: string): boolean | Promise<boolean> {
    const key = `${scope.tenant}/${campaignId}`;
    const now = this.now();
    const known = this.known.get(key);
    if (known && now - known.at < CANCEL_CHECK_MS) return known.paused;
    return this.ask(scope, campaignId, key, now);
  }

  private async ask(scope: TenantRepositories, campaignId: string, key: string, now: number): Promise<boolean> {
    const paused = (await scope.pausedCampaigns.findOne({ _id: campaignId })) !== null;
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(key, { paused, at: now });
    return paused;
  }

  /**
   * Records a campaign's change of status (campaign.status_changed): paused,
   * or no longer paused (resumed, cancelled, finished). Idempotent; events of
   * one campaign come in order (keyed by campaign).
   */
  async record(scope: TenantRepositories, campaignId: string, status: string, at: number): Promise<void> {
    const paused = status === "paused";
    if (paused) await scope.pausedCampaigns.upsertMany([{ _id: campaignId, paused_at: at }]);
    else await scope.pausedCampaigns.deleteOne({ _id: campaignId });
    this.known.set(`${scope.tenant}/${campaignId}`, { paused, at: this.now() });
  }
}

export interface IntakeDeps extends DeliveryDeps {
  cancelledCampaigns: CancelledCampaigns;
  pausedCampaigns: PausedCampaigns;
  /** Publishes events that no record carries (recipients not stored): lost with a crash, they come again with the redelivered request. */
  publish(events: EncodedEvent[]): Promise<void>;
  /** A new gathering of campaign outcomes, in the form this delivery publishes (EMAIL_STATUS_BATCHES). */
  campaignOutcomes(): CampaignOutcomes;
}

/**
 * Turns one tenant's campaign requests into email records and says which to
 * send. Idempotent: an email already stored is not stored again (a recipient
 * handed over twice is one email), and one already sent or failed is left out.
 *
 * A recipient that will not be mailed is answered on `email.status` with a
 * reason: one who may not get marketing mail (unsubscribed, bounced,
 * complained, suppressed: the subscribers service's answer) is stored
 * `suppressed`; an erased one (no subscriber any more) is answered
 * `suppressed` and not stored; one of a cancelled campaign `failed`, not stored.
 */
export async function intakeCampaignRequests(
  deps: IntakeDeps,
  scope: TenantRepositories,
  requests: readonly CampaignRequest[],
  signal: AbortSignal,
  /** Where the emails' outcomes go (email.status), for the caller to publish with the batch's others. */
  outcomes: CampaignOutcomes,
): Promise<IntakeResult[]> {
  const unique = new Map<string, CampaignRequest>();
  for (const r of requests) {
    if (isId("eml", r.emailId) && isId("cmp", r.campaignId) && isId("sub", r.subscriberId) && isId("tpl", r.templateId)) unique.set(r.emailId, r);
    else deps.logger.warn("campaign send request with malformed ids skipped");
  }
  const results: IntakeResult[] = [];
  const all = [...unique.values()];
  try {
    for (let i = 0; i < all.length; i += RECIPIENTS_PER_CALL) {
      results.push(...(await intakeChunk(deps, scope, all.slice(i, i + RECIPIENTS_PER_CALL), signal, outcomes)));
    }
  } catch (err) {
    // Nothing of the batch is sent now: the records stored so far keep their leases until they run out.
    for (const { campaign } of results) campaign.claimed?.leases.close();
    throw err;
  }
  return results;
}

async function intakeChunk(
  deps: IntakeDeps,
  scope: TenantRepositories,
  requests: CampaignRequest[],
  signal: AbortSignal,
  outcomes: CampaignOutcomes,
): Promise<IntakeResult[]> {
  const existing = new Map((await scope.emails.find({ _id: { $in: requests.map((r) => r.emailId) } })).map((d) => [d._id, d]));
  const open = requests.filter((r) => {
    const doc = existing.get(r.emailId);
    return !doc || !isFinal(doc.status);
  });
  // Handed over again (campaigns had no answer yet): the outcome is said again,
  // so that a campaign never waits for an answer that was already given.
  const answered = [...existing.values()].filter((d) => isFinal(d.status));
  if (answered.length > 0) {
    const again = deps.campaignOutcomes();
    for (const d of answered) again.add(scope.tenant, d, settledAs(d.status));
    await deps.publish(again.take());
  }
  if (open.length === 0) return [];
  if (!deps.recipients) throw new RetryLater("campaign recipients need the subscribers service (SUBSCRIBERS_URL)");
  let recipients: Map<string, AddressedRecipient>;
  try {
    recipients = await deps.recipients.byIds(scope.tenant, [...new Set(open.map((r) => r.subscriberId))], signal);
  } catch (err) {
    if (err instanceof RecipientsUnavailableError) throw new RetryLater("subscribers service unavailable for a campaign batch");
    throw err;
  }

  const now = deps.now();
  // Fresh records are stored claimed by this attempt (its lease and token), so sending starts without a claim write.
  const token = randomBytes(9).toString("base64url");
  const fresh: EmailDoc[] = [];
  const refused = deps.campaignOutcomes();
  // A recipient who may not be mailed: an email record `suppressed` with the reason (the account sees every skip),
  // stored before campaigns is told; an erased one has no address left to keep, and a cancel is no skip of theirs.
  const suppressedDocs: Array<Omit<EmailDoc, "tenant">> = [];
  const refuse = (r: CampaignRequest, reason: PublicErrorCode, status: "suppressed" | "failed") =>
    refused.add(scope.tenant, { _id: r.emailId, subscriber_id: r.subscriberId, campaign_id: r.campaignId, error: reason, failure_reason: reason }, status);
  const slugs = new Map<string, string>();
  for (const r of open) {
    if (existing.has(r.emailId)) continue;
    const recipient = recipients.get(r.subscriberId);
    // Campaign mail is marketing mail (domain/eligibility.ts).
    const refused = refusal("marketing", recipient ? recipient.mailability : "erased");
    // Awaited only when the campaign's state is not cached (most records of a chunk go on without an await).
    const cancelled = refused ? false : deps.cancelledCampaigns.isCancelled(scope, r.campaignId);
    if (refused) {
      if (recipient) suppressedDocs.push(suppressedDoc(deps, scope.tenant, r, recipient, refused, now));
      refuse(r, refused, "suppressed");
    } else if (cancelled === true || (cancelled instanceof Promise && (await cancelled))) refuse(r, "campaign_cancelled", "failed");
    else {
      // One lookup per template version of the chunk (a campaign's recipients share one).
      const version = `${r.templateId}:${r.templateVersion}`;
      let slug = slugs.get(version);
      if (slug === undefined) slugs.set(version, (slug = await templateSlug(deps, scope.tenant, r, recipient!.email, signal)));
      fresh.push(emailDoc(deps, scope.tenant, r, recipient!, slug, now, token));
    }
  }
  if (fresh.length > 0) {
    // Records are stored before anything is sent: a crash from here on finds them queued.
    const { duplicates } = await scope.emails.insertMany(fresh);
    // One stored meanwhile by another attempt (a request handed over twice at once) is not ours to send.
    for (const i of duplicates.reverse()) fresh.splice(i, 1);
    emailsByStatus.inc({ status: "queued" }, fresh.length);
  }
  if (suppressedDocs.length > 0) {
    // A duplicate is the same refusal stored by another attempt: nothing to do about it.
    const { duplicates } = await scope.emails.insertMany(suppressedDocs);
    emailsByStatus.inc({ status: "suppressed" }, suppressedDocs.length - duplicates.length);
  }
  if (refused.size > 0) await deps.publish(refused.take());
  // The fresh records' leases, renewed together until each is sent (lease.ts).
  const leases = fresh.length > 0 ? new LeaseGroup(deps, scope.emails, token, fresh.map((d) => d._id), now + deps.leaseMs, signal) : undefined;

  const byEmail = new Map(open.map((r) => [r.emailId, r]));
  const outcomeWrites = new OutcomeWrites(scope.emails);
  const report = (doc: StatusSource, status: CampaignReport) => outcomes.add(scope.tenant, doc, status);
  // The questions on a campaign's state, made once per campaign of the chunk rather than for each of its emails.
  const states = new Map<string, Pick<CampaignSend, "cancelled" | "paused">>();
  const stateOf = (campaignId: string) => {
    let state = states.get(campaignId);
    if (!state) {
      state = { cancelled: () => deps.cancelledCampaigns.isCancelled(scope, campaignId), paused: () => deps.pausedCampaigns.isPaused(scope, campaignId) };
      states.set(campaignId, state);
    }
    return state;
  };
  const send = (emailId: string, claimed?: EmailDoc): IntakeResult => {
    const r = byEmail.get(emailId)!;
    const { cancelled, paused } = stateOf(r.campaignId);
    return {
      emailId,
      campaign: {
        recipient: recipients.get(r.subscriberId),
        cancelled,
        paused,
        claimed: claimed && leases && { doc: claimed, leases },
        report,
        outcomeWrites,
      },
    };
  };
  return [
    // The records as built here (the store keeps its own copies): the send reads them, nothing changes them.
    ...fresh.map((d) => send(d._id, d)),
    ...[...existing.values()].filter((d) => !isFinal(d.status)).map((d) => send(d._id)),
  ];
}

function emailDoc(
  deps: DeliveryDeps,
  tenant: string,
  r: CampaignRequest,
  recipient: AddressedRecipient,
  slug: string,
  now: number,
  token: string,
): EmailDoc {
  return {
    _id: r.emailId,
    tenant,
    to: recipient.email,
    to_key: recipient.email.toLowerCase(),
    subscriber_id: r.subscriberId,
    campaign_id: r.campaignId,
    template_id: r.templateId,
    template_slug: slug,
    template_version: r.templateVersion,
    variables_json: "{}",
    idempotency_key: "",
    idem_key: `none:${r.emailId}`,
    request_hash: "",
    status: "queued",
    provider: providerForTenant(tenant, deps.liveProvider),
    message_id: "",
    error: "",
    last_error: "",
    attempts: 1,
    transient_failures: 0,
    lease_until: now + deps.leaseMs,
    lease_token: token,
    queued_at: now,
    sent_at: null,
    failed_at: null,
    updated_at: now,
    status_history: [{ status: "queued", at: now, detail: "" }],
    // No events: campaigns already counts the recipient as queued.
    ...newOutbox<EmailDoc["outbox"][number]>([]),
  };
}

/**
 * The record of a recipient the campaign may not mail: `suppressed` with the
 * reason, never sent. Its template slug is left empty (no template is fetched
 * for mail that does not go out); its outcome goes to campaigns with the batch.
 */
function suppressedDoc(deps: DeliveryDeps, tenant: string, r: CampaignRequest, recipient: AddressedRecipient, reason: PublicErrorCode, now: number): Omit<EmailDoc, "tenant"> {
  return {
    ...emailDoc(deps, tenant, r, recipient, "", now, ""),
    status: "suppressed",
    error: publicError(reason),
    failure_reason: reason,
    last_error: "refused at the campaign's intake: the recipient may not get marketing mail",
    attempts: 0,
    lease_until: 0,
    failed_at: now,
    status_history: [{ status: "suppressed", at: now, detail: reason }],
  };
}

/** The status a settled campaign email is said again with: campaigns reads sent, bounced, failed and suppressed. */
function settledAs(status: EmailStatus): string {
  return status === "delivered" || status === "complained" ? "sent" : status;
}

/**
 * The slug of the campaign's template version (the email record shows it),
 * from the renderer cache, which the send right after needs anyway. "" when
 * the version cannot be had: the send then fails the email with its reason.
 */
async function templateSlug(deps: DeliveryDeps, tenant: string, r: CampaignRequest, to: string, signal: AbortSignal): Promise<string> {
  try {
    const prepared = await templateVersion(deps, { _id: r.emailId, tenant, to, template_id: r.templateId, template_version: r.templateVersion }, signal);
    return prepared.template.slug;
  } catch (err) {
    if (err instanceof SendFailure) return "";
    if (err instanceof TemplatesUnavailableError) throw new RetryLater("templates service unavailable for a campaign batch");
    throw err;
  }
}
