import { withOutbox } from "@emailsvc/outbox";
import { inSpan, SpanKind, tracingEnabled, type Logger } from "@emailsvc/telemetry";
import type { TenantCollection, TenantUpdate } from "@emailsvc/storage";
import { PENDING, type ProviderName, type StatusChange } from "../domain/email.js";
import { mailCategory, refusal, type MailCategory } from "../domain/eligibility.js";
import type { DkimSigningKey, Sender } from "../domain/message.js";
import { bounceHostFor, returnPathFor } from "../domain/return-path.js";
import type { KeyRing } from "@emailsvc/tokens";
import { tenantOfKey } from "@emailsvc/tenancy";
import type { SigningKeyCache } from "./sender-domains.js";
import { afterFailure, SendFailure, type RetryPolicy, type SendResult } from "../domain/provider.js";
import type { IgnorableSuppression, RendererCache } from "../domain/renderer.js";
import { TemplatesUnavailableError, type TemplateSource } from "../domain/templates.js";
import { RecipientsUnavailableError, type Mailability, type Recipient, type RecipientDirectory } from "../domain/recipients.js";
import type { UnsubscribeUrlSource } from "../domain/unsubscribe.js";
import type { Providers } from "../providers/registry.js";
import type { EmailDoc, OutboxEntry } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { outboxEntry, providerForTenant, type OutboxFlusher } from "./deps.js";
import { claimEmail, Lease, type AttemptLease, type LeaseGroup } from "./lease.js";
import { emailsByStatus, handoffDuration } from "./metrics.js";
import type { OutcomeWrites } from "./outcome-writes.js";
import { cachedTemplate, mintLinks, mintsLinks, NO_LINKS, prepareMessage, prepareTemplate } from "./prepare-message.js";

// The send consumer's use case: one queued email from claim to outcome. The
// lease (lease.ts) keeps one attempt at a time on it; message preparation
// (prepare-message.ts) makes what goes out; this file decides whether it may go
// (domain/eligibility.ts, on the subscribers service's answer), hands it to
// the provider and records what happened.

/**
 * What the send consumer's use cases need besides the event's tenant's
 * collections; built once in server.ts. No collection here.
 */
export interface DeliveryDeps {
  relay: OutboxFlusher;
  templates: TemplateSource;
  renderers: RendererCache;
  /** The providers of this process (the registry's): an email goes through its tenant's. */
  providers: Providers;
  /** The provider live-mode emails go through (EMAIL_PROVIDER). */
  liveProvider: ProviderName;
  sender: Sender;
  /** FEEDBACK_ID_SENDER: the last field of every message's Feedback-ID. */
  feedbackTag: string;
  /**
   * The opened DKIM keys of the tenants' sending domains (cached per domain):
   * a message From one is signed (live mode: only once verified).
   */
  signingKeys?: SigningKeyCache | undefined;
  /**
   * Where the bounce receiver runs (BOUNCE_SMTP_PORT): each message's return
   * path names its email, signed with these keys (TOKEN_SIGNING_KEYS), at
   * `bounces.<From domain>` when that CNAME is verified, else at `host`
   * (RETURN_PATH_HOST). Absent: the envelope sender is the From address.
   */
  returnPaths?: { keys: KeyRing; host: string } | undefined;
  /** The platform's key (DKIM_PLATFORM_*): signs mail From EMAIL_FROM's address; absent: that mail goes unsigned. */
  platformDkim?: DkimSigningKey | undefined;
  unsubscribeUrl: UnsubscribeUrlSource;
  /** The recipient subscriber's preference page (`{{preference_center_url}}`), when links are minted. */
  preferenceUrl?: (target: { tenant: string; subscriberId: string }) => Promise<string | undefined> | string | undefined;
  /** The recipient subscriber's double opt-in confirmation link (`{{confirmation_url}}`), when links are minted. */
  confirmationUrl?: (target: { tenant: string; subscriberId: string }) => Promise<string | undefined> | string | undefined;
  /**
   * The subscribers service: whether the recipient may be mailed, and
   * `metadata.*` and the subscriber link of a subscriber recipient. None:
   * nobody can tell, so every email goes (tests and a lone delivery only).
   */
  recipients?: RecipientDirectory | undefined;
  retry: RetryPolicy;
  /**
   * How long a claim holds an email (ms) without being renewed. The attempt
   * renews it every third of this while it runs, so a crashed attempt's email
   * is free again within one lease.
   */
  leaseMs: number;
  /** The longest one attempt may take (ms), renewals included; then it is cut off. */
  attemptTimeoutMs: number;
  /** Rewrites the datafiles an erasure deleted from (the embedded store; nothing on MongoDB). */
  compactAfterErasure?: () => Promise<void>;
  /** EMAIL_STATUS_BATCHES: a campaign's outcomes as batch events (default), or off: one event an email (messaging/outbox.ts, CampaignOutcomes). */
  outcomeBatches?: boolean | undefined;
  logger: Logger;
  now: () => number;
}

/**
 * What the campaign intake already knows about an email of a campaign, so
 * that a batch costs one recipient lookup rather than one per email.
 */
export interface CampaignSend {
  /** The recipient's subscriber as looked up with the batch (with whether they may be mailed); undefined when erased. */
  recipient: Recipient | undefined;
  /**
   * Whether the email's campaign has been cancelled: asked right before the
   * hand-off. The answer itself while it is cached (campaign-intake.ts), else
   * a promise of it: most emails go on without an await.
   */
  cancelled(): boolean | Promise<boolean>;
  /** Whether the email's campaign is paused: asked right before the hand-off, after `cancelled`; as `cancelled`. */
  paused(): boolean | Promise<boolean>;
  /**
   * The email as the intake stored it, already claimed (a fresh record is
   * inserted leased, with its batch's token): the attempt starts without a
   * claim write, and its lease is renewed with the batch's.
   */
  claimed?: { doc: EmailDoc; leases: LeaseGroup } | undefined;
  /**
   * Takes the email's outcome instead of its outbox: the consumer publishes
   * the batch's outcomes in one go. Safe without an outbox because campaigns
   * hands an unanswered recipient over again, and the intake answers an email
   * already settled again (see campaign-intake.ts). `held`: not given to the
   * provider because the campaign is paused (the email stays queued).
   */
  report(doc: StatusSource, status: CampaignReport): void;
  /** Where the email's outcome is written, with the other outcomes of its batch written in the same turn (outcome-writes.ts). */
  outcomeWrites: OutcomeWrites;
}

/** What an email's `email.status` event is made of (messaging/outbox.ts, statusEvent). */
export type StatusSource = Pick<EmailDoc, "_id" | "subscriber_id" | "campaign_id" | "error" | "failure_reason" | "bounce">;

/** What the intake reports of a campaign's email (a bounce goes through the outbox instead, see `settle`). */
export type CampaignReport = "sent" | "failed" | "suppressed" | "held";

/** The fields an update of an email sets. */
type EmailSet = NonNullable<TenantUpdate<EmailDoc>["$set"]>;

const NONE_IGNORED: readonly IgnorableSuppression[] = [];

/** Thrown to have the bus deliver the event again after a backoff. The message holds no personal data. */
export class RetryLater extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RetryLater";
  }
}

/**
 * Sends one queued email: the handler of `email.send.requested`, on the
 * collections of the event's tenant. Idempotent per email id: a sent or failed
 * email is left alone, and a send attempt first claims the email with a
 * guarded write (a lease, renewed while the attempt runs), so two deliveries
 * of the event never send it at once.
 *
 * - a recipient who may not get the email's category of mail (the subscribers
 *   service's answer, asked again now: it may have changed since SendEmail):
 *   `suppressed` with the reason (`recipient_unsubscribed`, …), nothing sent;
 * - success: straight after the provider's reply, one small write records
 *   `sent` (sent_at, message_id, provider) with its `email.status` entry;
 * - SMTP 5xx: `bounced` hard, with the relay's reply as the diagnostic;
 *   template gone or not renderable: `failed` with its public error (see
 *   PUBLIC_ERRORS);
 * - "not now" (4xx) or no relay or service to talk to: `deferred` until
 *   `next_attempt_at` (backoff, domain/provider.ts), and the event is done
 *   with: the retry sweep (messaging/outbox.ts) asks for the email again when
 *   it is due, so it holds up no other mail; once the retry window has
 *   passed, `bounced` soft (4xx) or `failed` (`relay_unavailable`,
 *   `service_unavailable`);
 * - `shutdown` aborted mid-send, or the lease lost: nothing is written, as in
 *   a crash: the lease runs out and the redelivered event sends the email
 *   again, with the same Message-ID (see the README on the duplicate window).
 */
export async function deliverEmail(
  deps: DeliveryDeps,
  scope: TenantRepositories,
  emailId: string,
  shutdown: AbortSignal,
  campaign?: CampaignSend,
): Promise<void> {
  const { emails } = scope;
  const { logger } = deps;
  let claimed: EmailDoc;
  let token: string;
  let lease: AttemptLease;
  if (campaign?.claimed) {
    claimed = campaign.claimed.doc;
    token = claimed.lease_token;
    lease = campaign.claimed.leases.attempt(claimed._id);
  } else {
    const claim = await claimEmail(deps, emails, emailId);
    if ("done" in claim) return; // unknown (erased) or settled: a repeated event
    if ("busy" in claim) throw new RetryLater(`email ${emailId} is leased by another attempt`);
    ({ claimed, token } = claim);
    lease = new Lease(deps, emails, claimed._id, token, claimed.lease_until, shutdown);
  }
  const doc = claimed;

  // Made on first use: a campaign email that is sent logs nothing at info.
  let child: Logger | undefined;
  const log = () => (child ??= logger.child({ email_id: doc._id, attempt: claimed.attempts }));
  const providerName = providerForTenant(doc.tenant, deps.liveProvider);

  let failure: SendFailure;
  try {
    const signal = lease.signal;
    // What is at hand (a cached version, a campaign's recipient, no link to mint, the platform's From) is
    // taken without awaiting a promise: a campaign's email awaits only its campaign's state, the hand-off and its outcome.
    const prepared = cachedTemplate(deps, claimed) ?? (await prepareTemplate(deps, claimed, signal));
    const category = mailCategory(prepared.template.category, campaign !== undefined);
    const ignored = prepared.template.ignoreSuppressions ?? NONE_IGNORED;
    const recipient = campaign ? campaignRecipient(campaign, category, ignored) : await mayBeMailed(deps, emails, claimed, token, category, ignored, signal);
    // Last before the hand-off: a campaign cancelled meanwhile sends nothing more. Awaited only when not cached.
    const cancelled = campaign?.cancelled();
    if (cancelled === true || (cancelled instanceof Promise && (await cancelled))) {
      throw new SendFailure("permanent", "campaign_cancelled", { detail: "the campaign was cancelled" });
    }
    // A paused campaign's email is held: not given to the provider, not failed.
    const paused = campaign?.paused();
    if (campaign && (paused === true || (paused instanceof Promise && (await paused)))) {
      lease.stop();
      await hold(deps, emails, claimed, token);
      campaign.report(claimed, "held");
      return;
    }
    const links = mintsLinks(prepared, recipient) ? await mintLinks(deps, claimed, prepared, recipient) : NO_LINKS;
    const { message, subject } = prepareMessage(deps, claimed, prepared, recipient, category, links);
    const domain = message.from.address === deps.sender.address ? platformDomain(deps) : await sendingDomainOf(deps, scope, claimed.tenant, message.from);
    message.dkim = domain?.dkim;
    // VERP, where the bounce receiver runs: what comes back names this email (domain/return-path.ts).
    if (deps.returnPaths) {
      const host = bounceHostFor(domain?.returnPathVerified ? message.from.domain : undefined, deps.returnPaths.host);
      message.returnPath = returnPathFor(deps.returnPaths.keys, claimed._id, host);
    }
    const provider = deps.providers.forTenant(claimed.tenant);
    // The hand-off, in a span of its own (a child of the consumer's span) when tracing is on.
    const handoffStarted = performance.now();
    const context = { tenant: claimed.tenant, signal };
    let result: SendResult;
    try {
      result = await (tracingEnabled()
        ? inSpan(
            `${provider.name} send`,
            { kind: SpanKind.CLIENT, attributes: { "emailsvc.email_id": claimed._id, "emailsvc.provider": provider.name, "emailsvc.attempt": claimed.attempts } },
            () => provider.send(message, context),
          )
        : provider.send(message, context));
    } catch (err) {
      handoffDuration.observe({ provider: provider.name, outcome: err instanceof SendFailure ? err.kind : "error" }, (performance.now() - handoffStarted) / 1000);
      throw err;
    }
    // The relay has the message (SMTP: it answered 250). From here to the end
    // of the write below, a crash sends it again: nothing else happens in
    // between (the renewal timer stops, the log line comes after).
    const repliedAt = performance.now();
    lease.stop();
    const at = deps.now();
    const $set: EmailSet = { status: "sent", sent_at: at, message_id: message.messageId, subject };
    if (result.providerMessageId) $set.provider_message_id = result.providerMessageId;
    // Only what differs from the record as claimed (a campaign's fresh record has these already).
    if (claimed.provider !== provider.name) $set.provider = provider.name;
    if (claimed.error !== "") $set.error = "";
    if (claimed.last_error !== "") $set.last_error = "";
    if (claimed.next_attempt_at) $set.next_attempt_at = 0;
    await settle(deps, emails, claimed, "sent", at, campaign, { $set });
    const statusWriteMs = performance.now() - repliedAt;
    handoffDuration.observe({ provider: provider.name, outcome: "accepted" }, (repliedAt - handoffStarted) / 1000);
    // A campaign's sent emails are debug lines: its counts and each email's record
    // say what happened, and 100,000 info lines would bury everything else.
    if (!campaign || logger.isLevelEnabled("debug")) {
      log()[campaign ? "debug" : "info"](
        { provider: provider.name, template_id: claimed.template_id, response: result.response, status_write_ms: Math.round(statusWriteMs * 100) / 100 },
        "email sent",
      );
    }
    return;
  } catch (err) {
    if (err instanceof SendFailure) failure = err;
    else if (err instanceof TemplatesUnavailableError) failure = new SendFailure("unreachable", "service_unavailable", { detail: "templates service unavailable" });
    else if (err instanceof RecipientsUnavailableError) failure = new SendFailure("unreachable", "service_unavailable", { detail: "subscribers service unavailable" });
    else {
      // A store error or a bug: free the email for the next delivery of the event.
      await release(deps, emails, claimed, token, { last_error: "internal error" }).catch(() => undefined);
      throw err;
    }
  } finally {
    lease.end();
  }

  if (failure.kind === "aborted") {
    if (shutdown.aborted || lease.lost) {
      // Stopped mid-send, or another attempt may own the email now: act as a
      // crash would (write nothing; the lease decides who sends it).
      log().warn({ cause: shutdown.aborted ? "shutdown" : "lease lost" }, "send cut off; the email will be sent again once its lease runs out");
      throw new RetryLater(`send of ${doc._id} cut off`);
    }
    // The attempt's own deadline: the relay may or may not have taken it.
    failure = new SendFailure("transient", "relay_deferred", { detail: `send timed out: ${failure.detail}` });
  }

  const transientFailures = claimed.transient_failures + (failure.kind === "transient" ? 1 : 0);
  const now = deps.now();
  const outcome = afterFailure(failure, { attempts: claimed.attempts, queuedAt: claimed.queued_at, now }, deps.retry);
  if (outcome.kind === "retry") {
    await release(deps, emails, claimed, token, { last_error: failure.detail, transient_failures: transientFailures });
    log().warn({ kind: failure.kind, code: failure.code, detail: failure.detail }, "send failed; will retry");
    throw new RetryLater(`send of ${doc._id} failed (${failure.kind}); retrying`);
  }
  if (outcome.kind === "defer") {
    await defer(deps, emails, claimed, token, campaign, { nextAttemptAt: outcome.nextAttemptAt, reply: outcome.reply, lastError: failure.detail, transientFailures });
    log().warn({ kind: failure.kind, code: failure.code, detail: failure.detail, next_attempt_at: new Date(outcome.nextAttemptAt).toISOString() }, "send deferred");
    return;
  }
  await settle(deps, emails, claimed, outcome.status, now, campaign, {
    $set: {
      status: outcome.status,
      failed_at: now,
      provider: providerName,
      error: outcome.error,
      failure_reason: outcome.reason,
      last_error: failure.detail,
      transient_failures: transientFailures,
      next_attempt_at: 0,
      ...(outcome.bounce ? { bounce: outcome.bounce } : {}),
    },
  }, outcome.bounce?.diagnostic ?? outcome.reason);
  log().warn({ kind: failure.kind, code: failure.code, status: outcome.status, error: outcome.error, detail: failure.detail }, `email ${outcome.status}`);
}

/**
 * Defers the email to `nextAttemptAt`, freeing it: the retry sweep asks for it
 * again then. Its first deferral is a change of status (history, and
 * `email.status` through the outbox); later ones only move the time.
 */
async function defer(
  deps: DeliveryDeps,
  emails: TenantCollection<EmailDoc>,
  doc: EmailDoc,
  token: string,
  campaign: CampaignSend | undefined,
  d: { nextAttemptAt: number; reply: string; lastError: string; transientFailures: number },
): Promise<void> {
  const at = deps.now();
  const $set = {
    status: "deferred" as const,
    next_attempt_at: d.nextAttemptAt,
    retry_requested: false,
    last_error: d.lastError,
    transient_failures: d.transientFailures,
    lease_until: 0,
    lease_token: "",
    updated_at: at,
  };
  const guard = { _id: doc._id, lease_token: token, status: PENDING };
  if (doc.status === "deferred") {
    await emails.updateOne(guard, { $set });
    return;
  }
  const change: StatusChange = { status: "deferred", at, detail: d.reply };
  const update = { $set, $push: { status_history: { $each: [change] } } };
  // A campaign's email says nothing to campaigns until it is settled: its row stays queued meanwhile.
  const written = await emails.updateOne(guard, campaign ? update : withOutbox<EmailDoc, OutboxEntry>(update, [outboxEntry(at, "email.status", "deferred")], at));
  if (!written) return;
  emailsByStatus.inc({ status: "deferred" });
  if (!campaign) await deps.relay.afterWrite(written);
}

/**
 * The sending domain a message From `from` goes out with: the DKIM keys it
 * is signed with, and whether its return-path CNAME is verified (the return
 * path may then be aligned with it). The tenant's sending
 * domain of that name, verified in live mode, any state in test mode (whose
 * mail never leaves the sandbox). Mail From EMAIL_FROM's address is signed with
 * the platform's key when the operator gave one (DKIM_PLATFORM_*), else not.
 * Live mail From any other address whose domain is not verified (a
 * template's From, e.g. a campaign's, checked again now) fails for good with
 * `from_domain_not_verified`: the answer cached per domain is read again
 * before that, so a domain verified on another replica a moment ago passes.
 * A key that does not open (SEALING_KEYS lost the key that sealed it) fails
 * the attempt as an outage, never sends unsigned mail From a domain that has
 * a key.
 */
async function sendingDomainOf(
  deps: DeliveryDeps,
  scope: TenantRepositories,
  tenant: string,
  from: Sender,
): Promise<{ dkim: DkimSigningKey[]; returnPathVerified: boolean } | undefined> {
  if (from.address === deps.sender.address) return platformDomain(deps);
  if (!deps.signingKeys) return undefined;
  const cache = deps.signingKeys;
  const live = tenantOfKey(tenant).mode === "live";
  const read = async () => {
    try {
      return await cache.forDomain(tenant, scope.senderDomains, from.domain);
    } catch (err) {
      throw new SendFailure("unreachable", "service_unavailable", { detail: `the DKIM key of the sending domain does not open: ${err instanceof Error ? err.name : "error"}` });
    }
  };
  let keys = await read();
  if (live && keys?.status !== "verified") {
    cache.forget(tenant, from.domain);
    keys = await read();
    if (keys?.status !== "verified") {
      throw new SendFailure("permanent", "from_domain_not_verified", { detail: "the From domain is not a verified sending domain of the tenant" });
    }
  }
  if (!keys || (live && keys.status !== "verified")) return undefined;
  return {
    dkim: [
      { domain: keys.domain, selector: keys.rsa.selector, privateKey: keys.rsa.privateKey },
      { domain: keys.domain, selector: keys.ed25519.selector, privateKey: keys.ed25519.privateKey },
    ],
    returnPathVerified: keys.returnPathVerified,
  };
}

/** Mail From EMAIL_FROM's address: signed with the platform's key when the operator gave one (DKIM_PLATFORM_*), else not. */
function platformDomain(deps: DeliveryDeps): { dkim: DkimSigningKey[]; returnPathVerified: boolean } | undefined {
  return deps.platformDkim ? { dkim: [deps.platformDkim], returnPathVerified: false } : undefined;
}

/** A campaign's recipient (looked up with its batch) when they may get this category of mail; else as mayBeMailed refuses. */
function campaignRecipient(campaign: CampaignSend, category: MailCategory, ignored: readonly IgnorableSuppression[]): Recipient | undefined {
  const recipient = campaign.recipient;
  refuseUnless(category, recipient ? recipient.mailability : "erased", ignored);
  return recipient;
}

function refuseUnless(category: MailCategory, answer: Mailability | "erased" | "unknown", ignored: readonly IgnorableSuppression[]): void {
  const refused = refusal(category, answer, ignored);
  if (refused) throw new SendFailure("permanent", refused, { detail: `the recipient may not get ${category} mail (${refused})` });
}

/**
 * The recipient, once the subscribers service's answer says they may get this
 * category of mail (asked now: it may have changed since the email was
 * queued); otherwise a permanent SendFailure with the reason. Looked up by
 * address (a campaign's recipient comes with its batch: campaignRecipient),
 * and an email queued before its subscriber could be told is linked to them here.
 */
async function mayBeMailed(
  deps: DeliveryDeps,
  emails: TenantCollection<EmailDoc>,
  email: EmailDoc,
  token: string,
  category: MailCategory,
  ignored: readonly IgnorableSuppression[],
  signal: AbortSignal,
): Promise<Recipient | undefined> {
  let recipient: Recipient | undefined;
  let answer: Mailability | "erased" | "unknown";
  if (deps.recipients) {
    const found = await deps.recipients.lookup(email.tenant, email.to, signal);
    recipient = found.recipient;
    answer = found.mailability;
    if (recipient && !email.subscriber_id) await link(emails, email, token, recipient.subscriberId);
  } else {
    answer = "unknown";
  }
  refuseUnless(category, answer, ignored);
  return recipient;
}

/**
 * Records the outcome (first outcome wins: guarded by a status still to be
 * sent) with its email.status entry and its line in the history (`sent`: its sent_at): one
 * single-document write, then the outbox flush. A campaign's outcome goes
 * with its batch (`report`; its write with the others of the same turn,
 * outcome-writes.ts), except a bounce: it always leaves through the
 * outbox, whose effect tells the subscribers service (messaging/outbox.ts),
 * which must not be lost.
 *
 * The lease is not cleared: a settled email's lease is never read again (every
 * claim, renewal, sweep and erasure asks for a status still to be sent), and
 * two fewer fields is less for every store to check and write, per email.
 */
async function settle(
  deps: DeliveryDeps,
  emails: TenantCollection<EmailDoc>,
  doc: EmailDoc,
  status: "sent" | "bounced" | "failed" | "suppressed",
  at: number,
  campaign: CampaignSend | undefined,
  update: TenantUpdate<EmailDoc>,
  detail = "",
): Promise<void> {
  const $set = { ...update.$set, updated_at: at };
  // `sent` is not pushed: its change is sent_at, set here (storage/documents.ts, historyOf). The write
  // made once per email sent is then a $set alone: less to copy, check and store.
  const set: TenantUpdate<EmailDoc> = status === "sent" ? { $set } : { $set, $push: { status_history: { $each: [{ status, at, detail } satisfies StatusChange] } } };
  const guard = { _id: doc._id, status: PENDING };
  if (campaign !== undefined && status !== "bounced") {
    // With the batch's other outcomes of this turn (one store write for all),
    // answering whether it matched without a copy of the whole record
    // (updateOne's answer), which the report does not need: it is made of
    // what was claimed and just set.
    if (!(await campaign.outcomeWrites.write(guard, set))) return settledMeanwhile(deps, doc);
    emailsByStatus.inc({ status });
    campaign.report(
      {
        _id: doc._id,
        subscriber_id: doc.subscriber_id,
        campaign_id: doc.campaign_id,
        error: $set.error ?? doc.error,
        failure_reason: $set.failure_reason ?? doc.failure_reason,
        bounce: $set.bounce ?? doc.bounce,
      },
      status as CampaignReport,
    );
    return;
  }
  const written = await emails.updateOne(guard, withOutbox<EmailDoc, OutboxEntry>(set, [outboxEntry(at, "email.status", status)], at));
  if (!written) return settledMeanwhile(deps, doc);
  emailsByStatus.inc({ status });
  await deps.relay.afterWrite(written);
}

function settledMeanwhile(deps: DeliveryDeps, doc: EmailDoc): void {
  deps.logger.warn({ email_id: doc._id }, "email was settled by another attempt meanwhile");
}

/**
 * Links an email queued without its subscriber (SendEmail could not tell) before
 * it is sent, so that an erasure arriving meanwhile finds it (leased) and waits
 * for this attempt. A link, once set, is never changed.
 */
async function link(emails: TenantCollection<EmailDoc>, doc: EmailDoc, token: string, subscriberId: string): Promise<void> {
  await emails.updateOne({ _id: doc._id, lease_token: token, status: PENDING }, { $set: { subscriber_id: subscriberId } });
}

/**
 * Holds an email of a paused campaign: free and still queued, as if this
 * attempt had not started (it is no attempt: nothing reached the provider).
 * Campaigns hands the recipient over again on resume, and that send request
 * sends it; a cancel meanwhile fails it then (campaign_cancelled).
 */
async function hold(deps: DeliveryDeps, emails: TenantCollection<EmailDoc>, doc: EmailDoc, token: string): Promise<void> {
  await emails.updateOne(
    { _id: doc._id, lease_token: token, status: PENDING },
    { $set: { lease_until: 0, lease_token: "", updated_at: deps.now() }, $inc: { attempts: -1 } },
  );
}

/** Frees the email for the next attempt (only if this attempt still holds it). */
async function release(
  deps: DeliveryDeps,
  emails: TenantCollection<EmailDoc>,
  doc: EmailDoc,
  token: string,
  set: Pick<TenantUpdate<EmailDoc>, "$set">["$set"],
): Promise<void> {
  await emails.updateOne(
    { _id: doc._id, lease_token: token, status: PENDING },
    { $set: { ...set, lease_until: 0, lease_token: "", updated_at: deps.now() } },
  );
}
