import { randomBytes } from "node:crypto";
import { withOutbox } from "@emailsvc/outbox";
import { inSpan, SpanKind, tenantOfKey, type Logger } from "@emailsvc/runtime";
import type { TenantCollection, TenantUpdate } from "@emailsvc/storage";
import type { ProviderName } from "../domain/email.js";
import { isFinal } from "../domain/email.js";
import { buildMessage, scrubReason, type Sender } from "../domain/message.js";
import { afterFailure, SendFailure, type EmailProvider, type RetryPolicy } from "../domain/provider.js";
import { readsVariable, RenderLimitError, type TemplateRejectedError } from "@emailsvc/render";
import { RendererCache, type Builtins, type PreparedTemplate } from "../domain/renderer.js";
import { TemplatesUnavailableError, type TemplateSource } from "../domain/templates.js";
import { RecipientsUnavailableError, type Recipient, type RecipientDirectory } from "../domain/recipients.js";
import type { UnsubscribeUrlSource } from "../domain/unsubscribe.js";
import type { EmailDoc, OutboxEntry } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { outboxEntry, providerForTenant, type OutboxFlusher } from "./deps.js";
import { emailsByStatus, handoffDuration } from "./metrics.js";


/**
 * What the send consumer's use cases need besides the event's tenant's
 * collections; built once in server.ts. No collection here.
 */
export interface DeliveryDeps {
  relay: OutboxFlusher;
  templates: TemplateSource;
  renderers: RendererCache;
  /** By name; `sandbox` is always there. */
  providers: { sandbox: EmailProvider; smtp?: EmailProvider | undefined };
  /** The provider live-mode emails go through (EMAIL_PROVIDER). */
  liveProvider: ProviderName;
  sender: Sender;
  unsubscribeUrl: UnsubscribeUrlSource;
  /** The recipient subscriber's preference page (`{{preference_center_url}}`), when links are minted. */
  preferenceUrl?: (target: { tenant: string; subscriberId: string }) => Promise<string | undefined> | string | undefined;
  /** Where `metadata.*` and the subscriber link of a subscriber recipient come from; none: neither. */
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
  logger: Logger;
  now: () => number;
}

/**
 * What the campaign intake already knows about an email of a campaign, so
 * that a batch costs one recipient lookup rather than one per email.
 */
export interface CampaignSend {
  /** The recipient's subscriber as looked up with the batch; undefined when erased. */
  recipient: Recipient | undefined;
  /** Whether the email's campaign has been cancelled: asked right before the hand-off. */
  cancelled(): Promise<boolean>;
  /** Whether the email's campaign is paused: asked right before the hand-off, after `cancelled`. */
  paused(): Promise<boolean>;
  /**
   * The email as the intake stored it, already claimed with this token (a
   * fresh record is inserted leased): the attempt starts without a claim write.
   */
  claimed?: { doc: EmailDoc; token: string } | undefined;
  /**
   * Takes the email's outcome instead of its outbox: the consumer publishes
   * the batch's outcomes in one go. Safe without an outbox because campaigns
   * hands an unanswered recipient over again, and the intake answers an email
   * already settled again (see campaign-intake.ts). `held`: not given to the
   * provider because the campaign is paused (the email stays queued).
   */
  report(doc: EmailDoc, status: "sent" | "failed" | "held"): void;
}

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
 * - success: straight after the provider's reply, one small write records
 *   `sent` (sent_at, message_id, provider) with its `email.status` entry;
 * - permanent failure (SMTP 5xx, template gone or not renderable): `failed`
 *   with its public error (see PUBLIC_ERRORS);
 * - transient failure: the claim is released and RetryLater thrown, so the
 *   bus redelivers after a backoff; after `retry.maxAttempts` answered
 *   failures (or `retry.maxQueueAgeMs` of an unreachable provider), `failed`;
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
  let now = deps.now();
  if (campaign?.claimed) {
    ({ doc: claimed, token } = campaign.claimed);
  } else {
    const doc = await emails.findOne({ _id: emailId });
    if (!doc || isFinal(doc.status)) return; // unknown (erased) or done: a repeated event
    now = deps.now();
    token = randomBytes(9).toString("base64url");
    const won = await emails.updateOne(
      { _id: doc._id, status: "queued", lease_until: { $lt: now } },
      { $set: { lease_until: now + deps.leaseMs, lease_token: token, updated_at: now }, $inc: { attempts: 1 } },
    );
    if (!won) {
      const current = await emails.findOne({ _id: doc._id });
      if (!current || isFinal(current.status)) return;
      // Another attempt holds the lease (or held it and died): try again once it ran out.
      throw new RetryLater(`email ${doc._id} is leased by another attempt`);
    }
    claimed = won;
  }
  const doc = claimed;

  // Made on first use: a campaign email that is sent logs nothing at info.
  let child: Logger | undefined;
  const log = () => (child ??= logger.child({ email_id: doc._id, attempt: claimed.attempts }));
  const lease = new Lease(deps, emails, claimed._id, token, claimed.lease_until, shutdown);
  const providerName = providerForTenant(doc.tenant, deps.liveProvider);

  let failure: SendFailure;
  try {
    const signal = lease.signal;
    const prepared = await prepareTemplate(deps, claimed, signal);
    const variables = JSON.parse(claimed.variables_json) as Record<string, unknown>;
    let recipient: Recipient | undefined;
    if (campaign) {
      recipient = campaign.recipient;
      if (!recipient) throw new SendFailure("permanent", "recipient_erased", { detail: "the campaign's recipient is no subscriber any more" });
      if (recipient.status === "bounced" || recipient.status === "complained") {
        throw new SendFailure("permanent", "recipient_suppressed", { detail: `recipient's subscriber is ${recipient.status}` });
      }
    } else {
      recipient = deps.recipients ? await deps.recipients.lookup(claimed.tenant, claimed.to, signal) : undefined;
      if (recipient && !claimed.subscriber_id) await link(emails, claimed, token, recipient.subscriberId);
    }
    const marketing = prepared.template.category === "marketing" || campaign !== undefined;
    // Marketing mail goes to active subscribers only: whoever unsubscribed (by
    // the link below, the portal or the API), bounced or complained gets none.
    if (marketing && recipient && recipient.status !== "active") {
      throw new SendFailure("permanent", "recipient_unsubscribed", { detail: `recipient's subscriber is ${recipient.status}` });
    }
    // Last before the hand-off: a campaign cancelled meanwhile sends nothing more.
    if (campaign && (await campaign.cancelled())) {
      throw new SendFailure("permanent", "campaign_cancelled", { detail: "the campaign was cancelled" });
    }
    // A paused campaign's email is held: not given to the provider, not failed.
    if (campaign && (await campaign.paused())) {
      lease.stop();
      await hold(deps, emails, claimed, token);
      campaign.report(claimed, "held");
      return;
    }
    const unsubscribeUrl = marketing
      ? deps.unsubscribeUrl({
          tenant: claimed.tenant,
          emailId: claimed._id,
          subscriberId: recipient?.subscriberId,
          campaignId: claimed.campaign_id || undefined,
        })
      : undefined;
    // Every mail to a subscriber may link their preference page (a template
    // footer's {{preference_center_url}}); the signed link is minted only for
    // a version that shows it.
    const preferenceUrl =
      recipient?.subscriberId && readsVariable(prepared.render.variables, "preference_center_url")
        ? await deps.preferenceUrl?.({ tenant: claimed.tenant, subscriberId: recipient.subscriberId })
        : undefined;
    const rendered = render(prepared, variables, {
      email: claimed.to,
      ...(recipient ? { metadata: recipient.metadata } : {}),
      ...(unsubscribeUrl ? { unsubscribe_url: unsubscribeUrl } : {}),
      ...(preferenceUrl ? { preference_center_url: preferenceUrl } : {}),
    });
    const message = buildMessage({
      emailId: claimed._id,
      from: deps.sender,
      to: claimed.to,
      category: prepared.template.category,
      rendered,
      unsubscribeUrl,
      tenant: claimed.tenant,
      campaignId: claimed.campaign_id || undefined,
    });
    const provider = providerName === "smtp" ? deps.providers.smtp : deps.providers.sandbox;
    if (!provider) throw new SendFailure("unreachable", "relay_unavailable", { detail: "EMAIL_PROVIDER smtp is not configured (SMTP_URL)" });
    // The hand-off, in a span of its own (a child of the consumer's span when tracing is on).
    const handoffStarted = performance.now();
    const result = await inSpan(
      `${provider.name} send`,
      { kind: SpanKind.CLIENT, attributes: { "emailsvc.email_id": claimed._id, "emailsvc.provider": provider.name, "emailsvc.attempt": claimed.attempts } },
      () => provider.send(message, { tenant: claimed.tenant, signal }),
    ).catch((err: unknown) => {
      handoffDuration.observe({ provider: provider.name, outcome: err instanceof SendFailure ? err.kind : "error" }, (performance.now() - handoffStarted) / 1000);
      throw err;
    });
    // The relay has the message (SMTP: it answered 250). From here to the end
    // of the write below, a crash sends it again: nothing else happens in
    // between (the renewal timer stops, the log line comes after).
    const repliedAt = performance.now();
    lease.stop();
    const at = deps.now();
    await settle(deps, emails, claimed, "sent", at, campaign, {
      $set: { status: "sent", sent_at: at, message_id: message.messageId, provider: provider.name, error: "", last_error: "", subject: rendered.subject },
    });
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
  const outcome = afterFailure(
    failure,
    { attempts: claimed.attempts, transientFailures, queuedAt: claimed.queued_at, now: deps.now() },
    deps.retry,
  );
  if (outcome.retry) {
    await release(deps, emails, claimed, token, { last_error: failure.detail, transient_failures: transientFailures });
    log().warn({ kind: failure.kind, code: failure.code, detail: failure.detail }, "send failed; will retry");
    throw new RetryLater(`send of ${doc._id} failed (${failure.kind}); retrying`);
  }
  const at = deps.now();
  await settle(deps, emails, claimed, "failed", at, campaign, {
    $set: {
      status: "failed",
      failed_at: at,
      provider: providerName,
      error: outcome.error,
      last_error: failure.detail,
      transient_failures: transientFailures,
    },
  });
  log().warn({ kind: failure.kind, code: failure.code, error: outcome.error, detail: failure.detail }, "email failed");
}

/**
 * An attempt's hold on its email: renewed every third of the lease while the
 * attempt runs, so the lease can be short (a crashed attempt's email is free
 * again within seconds) and a send may still take longer than one lease. Its
 * signal aborts the send on shutdown, at the attempt's deadline, or when the
 * lease is lost (another attempt may own the email) or could not be renewed
 * before it ran out.
 */
class Lease {
  readonly signal: AbortSignal;
  lost = false;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** Cuts the attempt off at its deadline. */
  private readonly deadline: NodeJS.Timeout;
  private stopped = false;
  private readonly onShutdown = () => this.controller.abort(this.shutdown.reason);

  constructor(
    private readonly deps: Pick<DeliveryDeps, "leaseMs" | "attemptTimeoutMs" | "now" | "logger">,
    private readonly emails: TenantCollection<EmailDoc>,
    private readonly emailId: string,
    private readonly token: string,
    private until: number,
    private readonly shutdown: AbortSignal,
  ) {
    // One controller with a listener and a timer, not AbortSignal.any over
    // AbortSignal.timeout: that pair costs about 30 µs per email in Node 20,
    // a tenth of a campaign email's whole cost (bench/README.md).
    this.signal = this.controller.signal;
    this.deadline = setTimeout(() => this.controller.abort(new DOMException("the attempt timed out", "TimeoutError")), deps.attemptTimeoutMs);
    if (shutdown.aborted) this.controller.abort(shutdown.reason);
    else shutdown.addEventListener("abort", this.onShutdown, { once: true });
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.renew(), Math.max(1, Math.floor(this.deps.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    const until = this.deps.now() + this.deps.leaseMs;
    try {
      const renewed = await this.emails.updateOne(
        { _id: this.emailId, lease_token: this.token, status: "queued" },
        { $set: { lease_until: until } },
      );
      if (this.stopped) return;
      if (!renewed) return this.lose("lease lost");
      this.until = until;
    } catch (err) {
      if (this.stopped) return;
      this.deps.logger.warn({ email_id: this.emailId, err: err instanceof Error ? err.message : String(err) }, "lease renewal failed");
      // Past its end another attempt may claim the email: stop sending before then.
      if (this.deps.now() >= this.until - this.deps.leaseMs / 3) return this.lose("lease could not be renewed");
    }
    this.schedule();
  }

  private lose(reason: string): void {
    this.lost = true;
    this.stop();
    this.controller.abort(new Error(reason));
  }

  /** Stops renewing (the attempt is over, or about to write its outcome). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The attempt is over: its deadline and its shutdown listener go too. */
  end(): void {
    this.stop();
    clearTimeout(this.deadline);
    this.shutdown.removeEventListener("abort", this.onShutdown);
  }
}

type Renderable = Extract<PreparedTemplate, { render: unknown }>;

/**
 * The compiled renderer of the email's pinned template version, from the cache
 * or TemplateService. A version that cannot be rendered (beyond the limits of
 * @emailsvc/render, stored before they existed) fails the email for good
 * (`template_render_failed`; which part, line and limit in last_error); the
 * cache remembers it, so the version is neither fetched nor compiled again for
 * the next message.
 */
async function prepareTemplate(deps: DeliveryDeps, doc: EmailDoc, signal: AbortSignal): Promise<Renderable> {
  const prepared = await templateVersion(deps, doc, signal);
  if (prepared.rejected) {
    throw new SendFailure("permanent", "template_render_failed", {
      detail: `template ${doc.template_id} version ${doc.template_version} cannot be rendered: ${reasonOf(prepared.rejected)}`,
    });
  }
  return prepared;
}

/**
 * An email's template version, from the renderer cache or fetched from
 * TemplateService and compiled (and cached). Throws SendFailure when the
 * version no longer exists or does not compile, TemplatesUnavailableError
 * when the service does not answer.
 */
export async function templateVersion(
  deps: Pick<DeliveryDeps, "renderers" | "templates">,
  doc: Pick<EmailDoc, "_id" | "tenant" | "to" | "template_id" | "template_version">,
  signal: AbortSignal,
): Promise<PreparedTemplate> {
  const key = RendererCache.key(doc.tenant, doc.template_id, doc.template_version);
  const cached = deps.renderers.get(key);
  if (cached) return cached;
  const call = { tenant: tenantOfKey(doc.tenant), actor: "service:delivery", requestId: doc._id };
  const template = await deps.templates.byVersion(call, doc.template_id, doc.template_version, signal);
  if (!template || template.version !== doc.template_version) {
    throw new SendFailure("permanent", "template_unavailable", { detail: `template ${doc.template_id} version ${doc.template_version} no longer exists` });
  }
  try {
    return deps.renderers.put(key, template);
  } catch (err) {
    throw new SendFailure("permanent", "template_render_failed", { detail: `template could not be compiled: ${errorText(err, doc.to)}` });
  }
}

/**
 * Renders one message. Variables that make it exceed RENDER_LIMITS fail the
 * email for good (`template_render_failed`; which limit, never a variable's
 * value, in last_error).
 */
function render(prepared: Renderable, variables: Record<string, unknown>, builtins: Builtins) {
  try {
    return prepared.render(variables, builtins);
  } catch (err) {
    const detail = err instanceof RenderLimitError ? err.message : errorText(err, builtins.email ?? "");
    throw new SendFailure("permanent", "template_render_failed", { detail: `template could not be rendered: ${detail}` });
  }
}

/** "body line 3: blocks nested 3,000 deep; at most 32 (…)" for each problem. */
function reasonOf(rejected: TemplateRejectedError): string {
  return rejected.problems.map((p) => `${p.part === "html" ? "body" : "subject"}${p.line > 0 ? ` line ${p.line}` : ""}: ${p.message}`).join("; ");
}

/** An error's name and message without addresses, for last_error and logs (never the API). */
function errorText(err: unknown, recipient: string): string {
  return scrubReason(err instanceof Error ? `${err.name}: ${err.message}` : String(err), recipient);
}

/**
 * Records the outcome (first outcome wins: guarded by `status: queued`) with
 * its email.status entry: one single-document write, then the outbox flush.
 */
async function settle(
  deps: DeliveryDeps,
  emails: TenantCollection<EmailDoc>,
  doc: EmailDoc,
  status: "sent" | "failed",
  at: number,
  campaign: CampaignSend | undefined,
  update: TenantUpdate<EmailDoc>,
): Promise<void> {
  const set = { $set: { ...update.$set, lease_until: 0, lease_token: "", updated_at: at } };
  const written = await emails.updateOne(
    { _id: doc._id, status: "queued" },
    campaign ? set : withOutbox<EmailDoc, OutboxEntry>(set, [outboxEntry(at, "email.status", status)], at),
  );
  if (!written) {
    deps.logger.warn({ email_id: doc._id }, "email was settled by another attempt meanwhile");
    return;
  }
  emailsByStatus.inc({ status });
  if (campaign) campaign.report(written, status);
  else await deps.relay.afterWrite(written);
}

/**
 * Links an email queued without its subscriber (SendEmail could not tell) before
 * it is sent, so that an erasure arriving meanwhile finds it (leased) and waits
 * for this attempt. A link, once set, is never changed.
 */
async function link(emails: TenantCollection<EmailDoc>, doc: EmailDoc, token: string, subscriberId: string): Promise<void> {
  await emails.updateOne({ _id: doc._id, lease_token: token, status: "queued" }, { $set: { subscriber_id: subscriberId } });
}

/**
 * Holds an email of a paused campaign: free and still queued, as if this
 * attempt had not started (it is no attempt: nothing reached the provider).
 * Campaigns hands the recipient over again on resume, and that send request
 * sends it; a cancel meanwhile fails it then (campaign_cancelled).
 */
async function hold(deps: DeliveryDeps, emails: TenantCollection<EmailDoc>, doc: EmailDoc, token: string): Promise<void> {
  await emails.updateOne(
    { _id: doc._id, lease_token: token, status: "queued" },
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
    { _id: doc._id, lease_token: token, status: "queued" },
    { $set: { ...set, lease_until: 0, lease_token: "", updated_at: deps.now() } },
  );
}
