import { randomBytes } from "node:crypto";
import type { Logger } from "@emailsvc/runtime";
import type { Collection, Update } from "@emailsvc/storage";
import type { ProviderName } from "../domain/email.js";
import { isFinal } from "../domain/email.js";
import { buildMessage, type Sender } from "../domain/message.js";
import { afterFailure, SendFailure, type EmailProvider, type RetryPolicy } from "../domain/provider.js";
import { RenderLimitError, type TemplateRejectedError } from "@emailsvc/render";
import { RendererCache, type Builtins, type PreparedTemplate } from "../domain/renderer.js";
import { TemplatesUnavailableError, type TemplateSource } from "../domain/templates.js";
import { RecipientsUnavailableError, type RecipientDirectory } from "../domain/recipients.js";
import type { OutboxRelay } from "../messaging/outbox-relay.js";
import type { EmailDoc, SandboxMessageDoc } from "../storage/documents.js";
import { finish, outboxEntry, providerForTenant } from "./deps.js";

/** Who to unsubscribe a marketing recipient with: a one-click URL, or undefined when none is known yet. */
export type UnsubscribeUrlSource = (email: { tenant: string; emailId: string; to: string }) => Promise<string | undefined>;

/** What the send consumer needs; built once in server.ts. */
export interface DeliveryDeps {
  emails: Collection<EmailDoc>;
  /** The sandbox's kept messages (erasure deletes them). */
  sandbox: Collection<SandboxMessageDoc>;
  relay: OutboxRelay;
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
  /** How long one attempt holds an email (ms); the send is cut off before it runs out. */
  leaseMs: number;
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
 * Sends one queued email: the handler of `email.send.requested`. Idempotent
 * per email id: a sent or failed email is left alone, and a send attempt first
 * claims the email with a guarded write (a lease), so two deliveries of the
 * event never send it at once.
 *
 * - success: `sent` with sent_at, message_id, provider, in one write with its
 *   `email.status` event;
 * - permanent failure (SMTP 5xx, template gone): `failed` with the reason;
 * - transient failure: the claim is released and RetryLater thrown, so the
 *   bus redelivers after a backoff; after `retry.maxAttempts` answered
 *   failures (or `retry.maxQueueAgeMs` of an unreachable provider), `failed`
 *   with "gave up after N attempts: <last reason>";
 * - `shutdown` aborted mid-send: nothing is written, as in a crash: the lease
 *   runs out and the redelivered event sends the email again, with the same
 *   Message-ID (see the README on the duplicate window).
 */
export async function deliverEmail(
  deps: DeliveryDeps,
  target: { tenant: string; emailId: string },
  shutdown: AbortSignal,
): Promise<void> {
  const { emails, logger } = deps;
  const doc = await emails.findOne({ _id: target.emailId, tenant: target.tenant });
  if (!doc || isFinal(doc.status)) return; // unknown (erased) or done: a repeated event

  const now = deps.now();
  const token = randomBytes(9).toString("base64url");
  const claimed = await emails.updateOne(
    { _id: doc._id, tenant: doc.tenant, status: "queued", lease_until: { $lt: now } },
    { $set: { lease_until: now + deps.leaseMs, lease_token: token, updated_at: now }, $inc: { attempts: 1 } },
  );
  if (!claimed) {
    const current = await emails.findOne({ _id: doc._id, tenant: doc.tenant });
    if (!current || isFinal(current.status)) return;
    // Another attempt holds the lease (or held it and died): try again once it ran out.
    throw new RetryLater(`email ${doc._id} is leased by another attempt`);
  }

  const log = logger.child({ email_id: doc._id, attempt: claimed.attempts });
  // The attempt must end before its lease does, or another could start alongside.
  const deadline = AbortSignal.timeout(Math.max(1, Math.floor(deps.leaseMs * 0.8)));
  const signal = AbortSignal.any([shutdown, deadline]);
  const providerName = providerForTenant(doc.tenant, deps.liveProvider);

  let failure: SendFailure;
  try {
    const prepared = await prepareTemplate(deps, claimed, signal);
    const variables = JSON.parse(claimed.variables_json) as Record<string, unknown>;
    const unsubscribeUrl = prepared.template.category === "marketing"
      ? await deps.unsubscribeUrl({ tenant: claimed.tenant, emailId: claimed._id, to: claimed.to })
      : undefined;
    const recipient = deps.recipients ? await deps.recipients.lookup(claimed.tenant, claimed.to, signal) : undefined;
    if (recipient && !claimed.subscriber_id) await link(deps, claimed, token, recipient.subscriberId);
    const rendered = render(deps, claimed, prepared, variables, {
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
    if (!provider) throw new SendFailure("unreachable", "EMAIL_PROVIDER smtp is not configured (SMTP_URL)");
    const result = await provider.send(message, { tenant: claimed.tenant, signal });
    const at = deps.now();
    await settle(deps, claimed, {
      $set: {
        status: "sent",
        sent_at: at,
        message_id: message.messageId,
        provider: provider.name,
        error: "",
        last_error: "",
      },
    }, "sent", at);
    log.info({ provider: provider.name, template_id: claimed.template_id, response: result.response }, "email sent");
    return;
  } catch (err) {
    if (err instanceof SendFailure) failure = err;
    else if (err instanceof TemplatesUnavailableError) failure = new SendFailure("unreachable", "templates service unavailable");
    else if (err instanceof RecipientsUnavailableError) failure = new SendFailure("unreachable", "subscribers service unavailable");
    else {
      // A store error or a bug: free the email for the next delivery of the event.
      await release(deps, claimed, token, { last_error: "internal error" }).catch(() => undefined);
      throw err;
    }
  }

  if (failure.kind === "aborted") {
    if (shutdown.aborted) {
      // Stopped mid-send: act as a crash would (write nothing; the lease runs out).
      log.warn("send cut off by shutdown; the lease will run out and the email be sent again");
      throw new RetryLater(`send of ${doc._id} cut off by shutdown`);
    }
    // The attempt's own deadline: the relay may or may not have taken it.
    failure = new SendFailure("transient", `send timed out: ${failure.reason}`);
  }

  const transientFailures = claimed.transient_failures + (failure.kind === "transient" ? 1 : 0);
  const outcome = afterFailure(
    failure,
    { attempts: claimed.attempts, transientFailures, queuedAt: claimed.queued_at, now: deps.now() },
    deps.retry,
  );
  if (outcome.retry) {
    await release(deps, claimed, token, { last_error: failure.reason, transient_failures: transientFailures });
    log.warn({ kind: failure.kind, reason: failure.reason }, "send failed; will retry");
    throw new RetryLater(`send of ${doc._id} failed (${failure.kind}); retrying`);
  }
  const at = deps.now();
  await settle(deps, claimed, {
    $set: {
      status: "failed",
      failed_at: at,
      provider: providerName,
      error: outcome.reason,
      last_error: failure.reason,
      transient_failures: transientFailures,
    },
  }, "failed", at);
  log.warn({ kind: failure.kind, reason: outcome.reason }, "email failed");
}

type Renderable = Extract<PreparedTemplate, { render: unknown }>;

/**
 * The compiled renderer of the email's pinned template version, from the cache
 * or TemplateService. A version that cannot be rendered (beyond the limits of
 * @emailsvc/render, stored before they existed) fails the email for good with
 * a reason written for the API user; the cache remembers it, so the version is
 * neither fetched nor compiled again for the next message.
 */
async function prepareTemplate(deps: DeliveryDeps, doc: EmailDoc, signal: AbortSignal): Promise<Renderable> {
  const key = RendererCache.key(doc.tenant, doc.template_id, doc.template_version);
  const prepared = deps.renderers.get(key) ?? (await fetchAndCompile(deps, doc, key, signal));
  if (prepared.rejected) {
    throw new SendFailure("permanent", `template ${doc.template_id} version ${doc.template_version} cannot be rendered: ${reasonOf(prepared.rejected)}`);
  }
  return prepared;
}

async function fetchAndCompile(deps: DeliveryDeps, doc: EmailDoc, key: string, signal: AbortSignal): Promise<PreparedTemplate> {
  const [accountId = "", mode = ""] = doc.tenant.split(":");
  const call = {
    tenant: { accountId, mode: mode === "live" ? ("live" as const) : ("test" as const) },
    actor: "service:delivery",
    requestId: doc._id,
  };
  const template = await deps.templates.byVersion(call, doc.template_id, doc.template_version, signal);
  if (!template || template.version !== doc.template_version) {
    throw new SendFailure("permanent", `template ${doc.template_id} version ${doc.template_version} no longer exists`);
  }
  return deps.renderers.put(key, template);
}

/**
 * Renders one message. Variables that make it exceed RENDER_LIMITS fail the
 * email for good, with a reason written for the API user (the limit; never a
 * variable's value). Anything else is a bug: it fails the email too (it would
 * fail again), without its internal text, and is logged.
 */
function render(deps: DeliveryDeps, doc: EmailDoc, prepared: Renderable, variables: Record<string, unknown>, builtins: Builtins) {
  const version = `template ${doc.template_id} version ${doc.template_version}`;
  try {
    return prepared.render(variables, builtins);
  } catch (err) {
    if (err instanceof RenderLimitError) throw new SendFailure("permanent", `${version} could not be rendered: ${err.message}`);
    deps.logger.error({ email_id: doc._id, template_id: doc.template_id, version: doc.template_version, err: err instanceof Error ? err.name : typeof err }, "render failed");
    throw new SendFailure("permanent", `${version} could not be rendered`);
  }
}

/** "body line 3: blocks nested 3,000 deep; at most 32 (…)" for each problem. */
function reasonOf(rejected: TemplateRejectedError): string {
  return rejected.problems.map((p) => `${p.part === "html" ? "body" : "subject"}${p.line > 0 ? ` line ${p.line}` : ""}: ${p.message}`).join("; ");
}

/** Records the outcome (first outcome wins: guarded by `status: queued`) with its email.status event. */
async function settle(deps: DeliveryDeps, doc: EmailDoc, update: Update, status: "sent" | "failed", at: number): Promise<void> {
  const written = await deps.emails.updateOne(
    { _id: doc._id, tenant: doc.tenant, status: "queued" },
    {
      $set: { ...update.$set, lease_until: 0, lease_token: "", updated_at: at, outbox_pending: true },
      $push: { outbox: { $each: [outboxEntry(at, "email.status", status)] } },
      $inc: { version: 1 },
    },
  );
  if (!written) {
    deps.logger.warn({ email_id: doc._id }, "email was settled by another attempt meanwhile");
    return;
  }
  await finish(deps.relay, deps.logger, written);
}

/**
 * Links an email queued without its subscriber (SendEmail could not tell) before
 * it is sent, so that an erasure arriving meanwhile finds it (leased) and waits
 * for this attempt. A link, once set, is never changed.
 */
async function link(deps: DeliveryDeps, doc: EmailDoc, token: string, subscriberId: string): Promise<void> {
  await deps.emails.updateOne(
    { _id: doc._id, tenant: doc.tenant, lease_token: token, status: "queued" },
    { $set: { subscriber_id: subscriberId } },
  );
}

/** Frees the email for the next attempt (only if this attempt still holds it). */
async function release(deps: DeliveryDeps, doc: EmailDoc, token: string, set: Record<string, unknown>): Promise<void> {
  await deps.emails.updateOne(
    { _id: doc._id, tenant: doc.tenant, lease_token: token, status: "queued" },
    { $set: { ...set, lease_until: 0, lease_token: "", updated_at: deps.now() } },
  );
}
