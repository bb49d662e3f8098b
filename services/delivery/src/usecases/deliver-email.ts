import { randomBytes } from "node:crypto";
import type { Outbox } from "@emailsvc/outbox";
import type { Logger } from "@emailsvc/runtime";
import type { Scoped, TenantCollection, Update } from "@emailsvc/storage";
import type { ProviderName } from "../domain/email.js";
import { isFinal } from "../domain/email.js";
import { buildMessage, scrubReason, type Sender } from "../domain/message.js";
import { afterFailure, SendFailure, type EmailProvider, type RetryPolicy } from "../domain/provider.js";
import { RendererCache, type PreparedTemplate } from "../domain/renderer.js";
import { TemplatesUnavailableError, type TemplateSource } from "../domain/templates.js";
import { RecipientsUnavailableError, type RecipientDirectory } from "../domain/recipients.js";
import type { EmailDoc } from "../storage/documents.js";
import type { Repositories } from "../storage/repositories.js";
import { emailWrites, outboxEntry, providerForTenant } from "./deps.js";

/** Who to unsubscribe a marketing recipient with: a one-click URL, or undefined when none is known yet. */
export type UnsubscribeUrlSource = (email: { tenant: string; emailId: string; to: string }) => Promise<string | undefined>;

/**
 * What the send consumer needs besides the repositories of the event's
 * tenant; built once in server.ts. No collection here.
 */
export interface DeliveryDeps {
  /** Carries out a change's outbox right after its write. */
  outbox: Pick<Outbox<EmailDoc>, "afterWrite">;
  templates: TemplateSource;
  renderers: RendererCache;
  /** By name; `sandbox` is always there. */
  providers: { sandbox: EmailProvider; smtp?: EmailProvider | undefined };
  /** The provider live-mode emails go through (EMAIL_PROVIDER). */
  liveProvider: ProviderName;
  sender: Sender;
  unsubscribeUrl: UnsubscribeUrlSource;
  /** Where `metadata.*` and the subscriber link of a subscriber recipient come from; none: neither. */
  recipients?: RecipientDirectory | undefined;
  retry: RetryPolicy;
  /**
   * How long a claim holds an email without being renewed (ms). The attempt
   * renews it every third of that while it runs, so an attempt that dies
   * (kill -9, a lost machine) frees its email within this time.
   */
  leaseMs: number;
  /** The longest one attempt may take, renewals included (ms); then it is cut off as a timeout. */
  attemptTimeoutMs: number;
  logger: Logger;
  now: () => number;
}

/** Thrown to have the bus deliver the event again after a backoff. The message holds no personal data. */
export class RetryLater extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RetryLater";
  }
}

/**
 * Sends one queued email: the handler of `email.send.requested`, with the
 * repositories of the event's tenant. Idempotent per email id: a sent or
 * failed email is left alone, and a send attempt first claims the email with
 * a guarded write (a lease, renewed while the attempt runs), so two deliveries
 * of the event never send it at once.
 *
 * - success: `sent` with sent_at, message_id, provider and its `email.status`
 *   event, in one small write straight after the provider's reply (the relay's
 *   250), with nothing in between (see the README on the duplicate window);
 * - permanent failure (SMTP 5xx, template gone or unrenderable): `failed`,
 *   `error` a stable public code (domain/provider.ts), the detail in `last_error`;
 * - transient failure: the claim is released and RetryLater thrown, so the
 *   bus redelivers after a backoff; after `retry.maxAttempts` answered
 *   failures (or `retry.maxQueueAgeMs` of an unreachable provider), `failed`;
 * - `shutdown` aborted mid-send, or the lease lost: nothing is written, as in
 *   a crash: the lease runs out and the redelivered event sends the email
 *   again, with the same Message-ID.
 */
export async function deliverEmail(deps: DeliveryDeps, repos: Repositories, emailId: string, shutdown: AbortSignal): Promise<void> {
  const { emails } = repos;
  const { logger } = deps;
  const doc = await emails.findOne({ _id: emailId });
  if (!doc || isFinal(doc.status)) return; // unknown (erased) or done: a repeated event

  const now = deps.now();
  const token = randomBytes(9).toString("base64url");
  const claimed = await emails.updateOne(
    { _id: doc._id, status: "queued", lease_until: { $lt: now } },
    { $set: { lease_until: now + deps.leaseMs, lease_token: token, updated_at: now }, $inc: { attempts: 1 } },
  );
  if (!claimed) {
    const current = await emails.findOne({ _id: doc._id });
    if (!current || isFinal(current.status)) return;
    // Another attempt holds the lease (or held it and died): try again once it ran out.
    throw new RetryLater(`email ${doc._id} is leased by another attempt`);
  }

  const log = logger.child({ email_id: doc._id, attempt: claimed.attempts });
  const lease = new LeaseKeeper(emails, claimed._id, token, claimed.lease_until, deps, log);
  const deadline = AbortSignal.timeout(deps.attemptTimeoutMs);
  const signal = AbortSignal.any([shutdown, deadline, lease.lost]);
  const providerName = providerForTenant(claimed.tenant, deps.liveProvider);

  let failure: SendFailure;
  try {
    const prepared = await prepareTemplate(deps, claimed, signal);
    const variables = JSON.parse(claimed.variables_json) as Record<string, unknown>;
    const unsubscribeUrl = prepared.template.category === "marketing"
      ? await deps.unsubscribeUrl({ tenant: claimed.tenant, emailId: claimed._id, to: claimed.to })
      : undefined;
    const recipient = deps.recipients ? await deps.recipients.lookup(claimed.tenant, claimed.to, signal) : undefined;
    if (recipient && !claimed.subscriber_id) await link(emails, claimed, token, recipient.subscriberId);
    const rendered = render(prepared, variables, {
      email: claimed.to,
      ...(recipient ? { metadata: recipient.metadata } : {}),
      ...(unsubscribeUrl ? { unsubscribe_url: unsubscribeUrl } : {}),
    });
    const message = buildMessage({
      emailId: claimed._id,
      from: deps.sender,
      to: claimed.to,
      category: prepared.template.category,
      rendered,
      unsubscribeUrl,
    });
    const provider = providerName === "smtp" ? deps.providers.smtp : deps.providers.sandbox;
    if (!provider) throw new SendFailure("unreachable", "provider_unreachable", "EMAIL_PROVIDER smtp is not configured (SMTP_URL)");
    const result = await provider.send(message, { tenant: claimed.tenant, signal });
    // The relay has taken the message: from here to the end of the next write
    // a crash sends it twice (with the same Message-ID). So nothing runs in
    // between: the status is written at once, in one small write.
    lease.stop();
    const sentAt = deps.now();
    const written = await settle(emails, claimed, { $set: { status: "sent", sent_at: sentAt, message_id: message.messageId, provider: provider.name, error: "", last_error: "" } }, "sent", sentAt);
    await afterSettle(deps, log, written);
    log.info({ provider: provider.name, template_id: claimed.template_id, response: result.response }, "email sent");
    return;
  } catch (err) {
    lease.stop();
    if (err instanceof SendFailure) failure = err;
    else if (err instanceof TemplatesUnavailableError) failure = new SendFailure("unreachable", "platform_unavailable", "templates service unavailable");
    else if (err instanceof RecipientsUnavailableError) failure = new SendFailure("unreachable", "platform_unavailable", "subscribers service unavailable");
    else {
      // A store error or a bug: free the email for the next delivery of the event.
      await release(emails, claimed, token, { last_error: "internal error" }, deps.now()).catch(() => undefined);
      throw err;
    }
  }

  if (failure.kind === "aborted") {
    if (shutdown.aborted || lease.lost.aborted) {
      // Stopped mid-send, or another attempt may own the email now: act as a
      // crash would (write nothing; the lease decides who sends it).
      log.warn({ cause: shutdown.aborted ? "shutdown" : "lease lost" }, "send cut off; the email is sent again once its lease is free");
      throw new RetryLater(`send of ${doc._id} cut off`);
    }
    // The attempt's own deadline: the relay may or may not have taken it.
    failure = new SendFailure("transient", "retries_exhausted", `send timed out: ${failure.detail}`);
  }

  const transientFailures = claimed.transient_failures + (failure.kind === "transient" ? 1 : 0);
  const outcome = afterFailure(failure, { transientFailures, queuedAt: claimed.queued_at, now: deps.now() }, deps.retry);
  if (outcome.retry) {
    await release(emails, claimed, token, { last_error: failure.detail, transient_failures: transientFailures }, deps.now());
    log.warn({ kind: failure.kind, code: failure.code, detail: failure.detail }, "send failed; will retry");
    throw new RetryLater(`send of ${doc._id} failed (${failure.kind}); retrying`);
  }
  const failedAt = deps.now();
  const written = await settle(emails, claimed, {
    $set: {
      status: "failed",
      failed_at: failedAt,
      provider: providerName,
      error: outcome.error,
      last_error: failure.detail,
      transient_failures: transientFailures,
    },
  }, "failed", failedAt);
  await afterSettle(deps, log, written);
  log.warn({ kind: failure.kind, code: failure.code, detail: failure.detail }, "email failed");
}

/**
 * Keeps a claimed email's lease while its attempt runs: renews it every third
 * of the lease, guarded by the attempt's token. When a renewal finds the lease
 * taken (another attempt claimed the email after this one stalled past it) or
 * the lease runs out unrenewed, `lost` aborts the attempt.
 */
class LeaseKeeper {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly emails: TenantCollection<EmailDoc>,
    private readonly emailId: string,
    private readonly token: string,
    private until: number,
    private readonly deps: Pick<DeliveryDeps, "leaseMs" | "now">,
    private readonly log: Logger,
  ) {
    this.schedule();
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.renew(), Math.max(1, Math.floor(this.deps.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    const now = this.deps.now();
    if (now >= this.until) {
      this.controller.abort(new Error("lease expired"));
      return;
    }
    try {
      const renewed = await this.emails.updateOne(
        { _id: this.emailId, lease_token: this.token, status: "queued" },
        { $set: { lease_until: now + this.deps.leaseMs } },
      );
      if (this.stopped) return; // the outcome is written (or being written): nothing to keep
      if (!renewed) {
        this.controller.abort(new Error("lease lost"));
        return;
      }
      this.until = now + this.deps.leaseMs;
    } catch (err) {
      // Try again at the next tick; the lease still runs until `until`.
      this.log.warn({ error: err instanceof Error ? err.name : "error" }, "lease renewal failed");
    }
    this.schedule();
  }

  /** Synchronous, so the write that follows it starts at once. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

/** The compiled renderer of the email's pinned template version, from the cache or TemplateService. */
async function prepareTemplate(deps: DeliveryDeps, doc: EmailDoc, signal: AbortSignal): Promise<PreparedTemplate> {
  const key = RendererCache.key(doc.tenant, doc.template_id, doc.template_version);
  const cached = deps.renderers.get(key);
  if (cached) return cached;
  const [accountId = "", mode = ""] = doc.tenant.split(":");
  const call = {
    tenant: { accountId, mode: mode === "live" ? ("live" as const) : ("test" as const) },
    actor: "service:delivery",
    requestId: doc._id,
  };
  const template = await deps.templates.byVersion(call, doc.template_id, doc.template_version, signal);
  if (!template || template.version !== doc.template_version) {
    throw new SendFailure("permanent", "template_missing", `template ${doc.template_id} version ${doc.template_version} no longer exists`);
  }
  try {
    return deps.renderers.put(key, template);
  } catch (err) {
    throw new SendFailure("permanent", "template_render_failed", `template could not be compiled: ${errorText(err, doc.to)}`);
  }
}

function render(prepared: PreparedTemplate, variables: Record<string, unknown>, builtins: Parameters<PreparedTemplate["render"]>[1]) {
  try {
    return prepared.render(variables, builtins);
  } catch (err) {
    throw new SendFailure("permanent", "template_render_failed", `template could not be rendered: ${errorText(err, "")}`);
  }
}

function errorText(err: unknown, recipient: string): string {
  return scrubReason(err instanceof Error ? `${err.name}: ${err.message}` : String(err), recipient);
}

/**
 * Records the outcome (first outcome wins: guarded by `status: queued`) with
 * its email.status event: one single-document write.
 */
function settle(
  emails: TenantCollection<EmailDoc>,
  doc: EmailDoc,
  update: { $set: NonNullable<Update<Scoped<EmailDoc>>["$set"]> },
  status: "sent" | "failed",
  at: number,
): Promise<EmailDoc | null> {
  return emails.updateOne(
    { _id: doc._id, status: "queued" },
    emailWrites.appended({ $set: { ...update.$set, lease_until: 0, lease_token: "" } }, [outboxEntry(at, "email.status", status)], at),
  );
}

/** Publishes the settled email's status event, or says that another attempt settled it first. */
async function afterSettle(deps: DeliveryDeps, log: Logger, written: EmailDoc | null): Promise<void> {
  if (!written) {
    log.warn("email was settled by another attempt meanwhile");
    return;
  }
  await deps.outbox.afterWrite(written);
}

/**
 * Links an email queued without its subscriber (SendEmail could not tell) before
 * it is sent, so that an erasure arriving meanwhile finds it (leased) and waits
 * for this attempt. A link, once set, is never changed.
 */
async function link(emails: TenantCollection<EmailDoc>, doc: EmailDoc, token: string, subscriberId: string): Promise<void> {
  await emails.updateOne({ _id: doc._id, lease_token: token, status: "queued" }, { $set: { subscriber_id: subscriberId } });
}

/** Frees the email for the next attempt (only if this attempt still holds it). */
async function release(
  emails: TenantCollection<EmailDoc>,
  doc: EmailDoc,
  token: string,
  set: { last_error: string; transient_failures?: number },
  now: number,
): Promise<void> {
  await emails.updateOne({ _id: doc._id, lease_token: token, status: "queued" }, { $set: { ...set, lease_until: 0, lease_token: "", updated_at: now } });
}
