import { AppError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { newOutbox } from "@emailsvc/outbox";
import { DuplicateKeyError } from "@emailsvc/storage";
import {
  idempotencyKeyReused,
  recipientKey,
  requestHash,
  validateIdempotencyKey,
  validateRecipient,
  validateSlug,
  validateVariables,
  validateDisplayName,
  type EmailView,
} from "../domain/email.js";
import { mailCategory, refusal } from "../domain/eligibility.js";
import { publicError } from "../domain/provider.js";
import type { AddressAnswer } from "../domain/recipients.js";
import { TemplatesUnavailableError } from "../domain/templates.js";
import { emailsByStatus } from "./metrics.js";
import { tenantOfKey } from "@emailsvc/tenancy";
import type { EmailDoc } from "../storage/documents.js";
import { emailView, outboxEntry, providerForTenant, type Deps, type Scope } from "./deps.js";

export interface SendEmailInput {
  templateSlug: unknown;
  to: unknown;
  variables: unknown;
  idempotencyKey: unknown;
  /** Optional From address, display name and Reply-To ("" or absent: none). */
  fromEmail?: unknown;
  fromName?: unknown;
  replyTo?: unknown;
  signal?: AbortSignal;
}

export interface SendEmailResult {
  email: EmailView;
  /** True when an earlier request with this idempotency key is answered again. */
  replayed: boolean;
  /** True when the recipient may not get this mail: stored suppressed at once, never sent (the same on every replay). */
  refused: boolean;
}

/**
 * Queues one email and returns at once; the send consumer delivers it. When
 * the subscribers service answers in time that the recipient may not get the
 * template's category of mail (domain/eligibility.ts), the email is stored
 * `suppressed` with the reason instead, and never sent: the caller learns it at
 * once (a trigger records its fire as skipped). Without an answer in time the
 * send attempt asks again, as it always does.
 *
 * Idempotency as Stripe does it: a key is bound to the request that first used
 * it (by a hash of the body). The same key with the same body returns the
 * original email (`replayed`) and sends nothing more; with another body it is
 * a 409. Concurrent requests with one key are decided by the unique index on
 * (tenant, idem_key): one insert wins, the others read the winner and compare.
 * Invalid requests are rejected before the key is looked at, and never bind it.
 * In test mode each new email counts against the account's quota
 * (TEST_MODE_DAILY_LIMIT): past it a 429 `test_mode_quota_exceeded`. Only the
 * request whose insert stores the email pays; one that loses the race on its
 * key gives its charge back and replays the winner.
 */
export async function sendEmail(deps: Deps, scope: Scope, input: SendEmailInput): Promise<SendEmailResult> {
  const templateSlug = validateSlug(input.templateSlug);
  const to = validateRecipient(input.to);
  const variables = validateVariables(input.variables);
  const idempotencyKey = validateIdempotencyKey(input.idempotencyKey);
  const sender = validateSender(input);
  const hash = requestHash({ templateSlug, to, variables, ...sender });

  if (idempotencyKey !== undefined) {
    const earlier = await scope.emails.findOne({ idem_key: `key:${idempotencyKey}` });
    if (earlier) return replay(earlier, hash);
  }

  const [template, answer] = await Promise.all([
    resolveTemplate(deps, scope, templateSlug, input.signal),
    recipientAtSend(deps, scope.tenant, to, input.signal),
  ]);
  // The send's own From, else its template's: either must be on a verified domain in live mode.
  const fromEmail = sender.fromEmail || template.sender?.fromEmail;
  if (fromEmail) await requireVerifiedDomain(scope, fromEmail);
  const category = mailCategory(template.category, false);
  const refused = answer ? refusal(category, answer.mailability, template.ignoreSuppressions) : undefined;
  // Only a request that queues a new email to be sent is charged: bad input, replays and refusals are
  // not, and neither is one whose insert does not happen (below: the charge is given back).
  const charged = !refused && deps.testModeQuota !== undefined;
  if (charged) await deps.testModeQuota!.charge(scope.tenant);
  const now = deps.now();
  const id = newId("eml");
  const doc: Omit<EmailDoc, "tenant"> = {
    _id: id,
    to,
    to_key: recipientKey(to),
    subscriber_id: answer?.recipient?.subscriberId ?? "",
    template_id: template.templateId,
    template_slug: template.slug,
    template_version: template.version,
    variables_json: JSON.stringify(variables),
    ...(sender.fromEmail ? { from_email: sender.fromEmail } : {}),
    ...(sender.fromName !== undefined ? { from_name: sender.fromName } : {}),
    ...(sender.replyTo ? { reply_to: sender.replyTo } : {}),
    idempotency_key: idempotencyKey ?? "",
    idem_key: idempotencyKey !== undefined ? `key:${idempotencyKey}` : `none:${id}`,
    request_hash: hash,
    status: "queued",
    provider: providerForTenant(scope.tenant, deps.liveProvider),
    message_id: "",
    error: "",
    last_error: "",
    attempts: 0,
    transient_failures: 0,
    lease_until: 0,
    lease_token: "",
    queued_at: now,
    sent_at: null,
    failed_at: null,
    updated_at: now,
    ...(refused
      ? {
          // Refused as it is asked for: suppressed at the moment it was queued, no attempt (refusedAtSend).
          status: "suppressed" as const,
          error: publicError(refused),
          failure_reason: refused,
          last_error: `refused at send: the recipient may not get ${category} mail`,
          failed_at: now,
          status_history: [{ status: "suppressed" as const, at: now, detail: refused }],
          ...newOutbox([outboxEntry(now, "email.status", "suppressed")]),
        }
      : {
          status_history: [{ status: "queued" as const, at: now, detail: "" }],
          ...newOutbox([outboxEntry(now, "email.send.requested"), outboxEntry(now, "email.status", "queued")]),
        }),
  };
  try {
    await scope.emails.insertOne(doc);
  } catch (err) {
    // Nothing was queued: a concurrent request with the same key pays for its own email, which this one
    // replays (two requests racing on one key were charged twice), and a failed write sends nothing.
    if (charged) await deps.testModeQuota!.refund(scope.tenant);
    if (err instanceof DuplicateKeyError && idempotencyKey !== undefined) {
      // A concurrent request with the same key won the insert.
      const winner = await scope.emails.findOne({ idem_key: `key:${idempotencyKey}` });
      if (winner) return replay(winner, hash);
    }
    throw err;
  }
  const stored = { ...doc, tenant: scope.tenant } as EmailDoc;
  emailsByStatus.inc({ status: stored.status });
  await deps.relay.afterWrite(stored);
  return { email: emailView(stored), replayed: false, refused: refused !== undefined };
}

/** From and Reply-To as given: addresses by the one address rule, a display name without line breaks. */
function validateSender(input: SendEmailInput): { fromEmail?: string; fromName?: string; replyTo?: string } {
  const given = (value: unknown) => value !== undefined && value !== null && value !== "";
  const sender: { fromEmail?: string; fromName?: string; replyTo?: string } = {};
  if (given(input.fromEmail)) sender.fromEmail = validateRecipient(input.fromEmail, "from.email");
  if (given(input.fromName)) sender.fromName = validateDisplayName(input.fromName);
  if (given(input.replyTo)) sender.replyTo = validateRecipient(input.replyTo, "reply_to");
  return sender;
}

/**
 * Live mail may only be From a verified sending domain of the tenant (the
 * domain exactly: a subdomain is a domain of its own, with its own records);
 * test mode never delivers, so it may use any. Refused before anything is
 * stored or charged: 422 `from_domain_not_verified` naming the domain.
 */
async function requireVerifiedDomain(scope: Scope, fromEmail: string): Promise<void> {
  if (tenantOfKey(scope.tenant).mode !== "live") return;
  const domain = fromEmail.slice(fromEmail.lastIndexOf("@") + 1).toLowerCase();
  const verified = await scope.senderDomains.findOne({ name: domain, status: "verified" });
  if (!verified) {
    throw new AppError("unprocessable", "from_domain_not_verified", `${domain} is not a verified sending domain of this account; add it (POST /api/v1/domains), publish its records and verify it`, {
      fieldViolations: [{ field: "from.email", description: `${domain} is not a verified sending domain` }],
    });
  }
}

function replay(earlier: EmailDoc, hash: string): SendEmailResult {
  if (earlier.request_hash !== hash) throw idempotencyKeyReused(earlier._id);
  return { email: emailView(earlier), replayed: true, refused: refusedAtSend(earlier) };
}

/**
 * Whether SendEmail refused the email as it was asked for: only that write
 * stores an email suppressed at its queueing instant with no attempt (a send
 * attempt counts one). Emails refused before `suppressed` existed were
 * stored `failed` the same way.
 */
function refusedAtSend(doc: EmailDoc): boolean {
  return (doc.status === "suppressed" || doc.status === "failed") && doc.attempts === 0 && doc.failed_at === doc.queued_at;
}

/** Time SendEmail gives the subscribers service before it leaves the question to the first send attempt. */
const LOOKUP_AT_SEND_MS = 1000;

/**
 * What the subscribers service says about the recipient: their subscriber id,
 * so that an email queued for a subscriber is erased with them even before it
 * is sent, and whether they may be mailed. Best effort: without an answer in
 * time (undefined) the email is queued and the send attempt asks again.
 */
async function recipientAtSend(deps: Deps, tenant: string, to: string, signal: AbortSignal | undefined): Promise<AddressAnswer | undefined> {
  if (!deps.recipients) return undefined;
  const timeout = AbortSignal.timeout(LOOKUP_AT_SEND_MS);
  try {
    return await deps.recipients.lookup(tenant, to, signal ? AbortSignal.any([signal, timeout]) : timeout);
  } catch (err) {
    deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "recipient lookup at send failed; asked again at the send attempt");
    return undefined;
  }
}

async function resolveTemplate(deps: Deps, scope: Scope, slug: string, signal: AbortSignal | undefined) {
  let template;
  try {
    template = await deps.templates.bySlug(scope.call, slug, signal);
  } catch (err) {
    if (err instanceof TemplatesUnavailableError) {
      throw new AppError("unavailable", "templates_unavailable", "the templates service is unavailable; try again");
    }
    throw err;
  }
  if (!template) {
    throw new AppError("not_found", "template_not_found", "no template with this slug", {
      fieldViolations: [{ field: "template_slug", description: "no template with this slug" }],
    });
  }
  return template;
}
