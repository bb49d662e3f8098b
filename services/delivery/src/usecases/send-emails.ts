import { AppError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { newOutbox } from "@emailsvc/outbox";
import { tenantOfKey } from "@emailsvc/tenancy";
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
  type Variables,
} from "../domain/email.js";
import { mailCategory, refusal } from "../domain/eligibility.js";
import { publicError, type PublicErrorCode } from "../domain/provider.js";
import type { AddressAnswer } from "../domain/recipients.js";
import type { CompiledTemplate } from "../domain/renderer.js";
import { TemplatesUnavailableError } from "../domain/templates.js";
import { emailsByStatus } from "./metrics.js";
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
}

export interface SendEmailResult {
  email: EmailView;
  /** True when an earlier request with this idempotency key is answered again. */
  replayed: boolean;
  /** True when the recipient may not get this mail: stored suppressed at once, never sent (the same on every replay). */
  refused: boolean;
}

/** One message's outcome: accepted (queued, refused for its recipient, or replayed), or what SendEmail would have thrown for it. */
export type SendOutcome = SendEmailResult | { error: AppError };

/** Most messages one call takes (POST /api/v1/emails/batch; Postmark's batch size). */
export const MAX_BATCH_MESSAGES = 500;

/** Time SendEmail gives the subscribers service before it leaves the question to the first send attempt. */
const LOOKUP_AT_SEND_MS = 1000;

/** A message that passed validation, on its way through the rules. */
interface Candidate {
  index: number;
  templateSlug: string;
  to: string;
  variables: Variables;
  idempotencyKey: string | undefined;
  sender: Sender;
  hash: string;
}

interface Sender {
  fromEmail?: string;
  fromName?: string;
  replyTo?: string;
}

/**
 * The send rules, for one message (SendEmail) and for a batch (SendEmails)
 * alike: each message is decided as if sent alone, and its outcome is in its
 * place of the answer. The batch only shares the work: one idempotency query,
 * one template lookup per slug, one recipient lookup for all the addresses,
 * one check per From domain, one test-mode charge and one insertMany.
 *
 * Queues each email and returns at once; the send consumer delivers it. When
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
 * A key given twice in one batch is the same: the first message uses it, the
 * later ones replay it (or are refused as reused with another body).
 * Invalid messages are rejected before the key is looked at, and never bind it.
 *
 * In test mode each new email counts against the account's quota
 * (TEST_MODE_DAILY_LIMIT), charged once for all the batch's new emails: when
 * they do not all fit, each of them is refused with 429
 * `test_mode_quota_exceeded` and nothing of the batch is queued (replays and
 * refusals, which cost nothing, are still answered). Only messages whose
 * insert stores an email pay; one that loses the race on its key gets its
 * charge back and replays the winner.
 */
export async function sendEmails(deps: Deps, scope: Scope, inputs: readonly SendEmailInput[], signal?: AbortSignal): Promise<SendOutcome[]> {
  const outcomes = new Array<SendOutcome | undefined>(inputs.length);
  const fail = (index: number, err: unknown) => {
    if (!(err instanceof AppError)) throw err;
    outcomes[index] = { error: err };
  };

  const candidates: Candidate[] = [];
  inputs.forEach((input, index) => {
    try {
      candidates.push(validate(input, index));
    } catch (err) {
      fail(index, err);
    }
  });

  // Keys used before this call: replays (or 409s) at once. A key given twice in the batch: the first decides.
  const keys = [...new Set(candidates.flatMap((c) => (c.idempotencyKey !== undefined ? [`key:${c.idempotencyKey}`] : [])))];
  const earlier = new Map((await emailsWithKeys(scope, keys)).map((d) => [d.idem_key, d]));
  const firstWithKey = new Map<string, Candidate>();
  const open: Candidate[] = [];
  const laterWithKey: Candidate[] = [];
  for (const c of candidates) {
    const key = c.idempotencyKey !== undefined ? `key:${c.idempotencyKey}` : undefined;
    const found = key !== undefined ? earlier.get(key) : undefined;
    if (found) {
      try {
        outcomes[c.index] = replay(found, c.hash);
      } catch (err) {
        fail(c.index, err);
      }
    } else if (key !== undefined && firstWithKey.has(key)) {
      laterWithKey.push(c);
    } else {
      if (key !== undefined) firstWithKey.set(key, c);
      open.push(c);
    }
  }

  // What the open messages need, looked up once each: templates by slug, recipients by address, From domains.
  const templates = await lookupEach(unique(open.map((c) => c.templateSlug)), (slug) => resolveTemplate(deps, scope, slug, signal));
  const answers = await recipientsAtSend(deps, scope.tenant, unique(open.map((c) => c.to.toLowerCase())), signal);
  const fromOf = (c: Candidate) => c.sender.fromEmail || templateOf(templates, c)?.sender?.fromEmail;
  const froms = unique(open.flatMap((c) => fromOf(c) ?? []));
  const domains = await lookupEach(froms, (from) => requireVerifiedDomain(scope, from));

  const now = deps.now();
  const toQueue: Array<{ c: Candidate; doc: Omit<EmailDoc, "tenant">; refused: boolean }> = [];
  for (const c of open) {
    const template = templates.get(c.templateSlug)!;
    if ("error" in template) {
      fail(c.index, template.error);
      continue;
    }
    const from = fromOf(c);
    const domain = from ? domains.get(from) : undefined;
    if (domain && "error" in domain) {
      fail(c.index, domain.error);
      continue;
    }
    const answer = answers.get(c.to.toLowerCase());
    const category = mailCategory(template.value.category, false);
    const refused = answer ? refusal(category, answer.mailability, template.value.ignoreSuppressions) : undefined;
    toQueue.push({ c, doc: emailDoc(deps, scope, c, template.value, answer, refused, category, now), refused: refused !== undefined });
  }

  // Only messages that queue a new email to be sent are charged: bad input, replays and refusals are
  // not, and neither is one whose insert does not happen (below: the charge is given back).
  const paying = toQueue.filter((q) => !q.refused).length;
  const quota = deps.testModeQuota;
  let charged = 0;
  if (quota && paying > 0) {
    try {
      await quota.charge(scope.tenant, paying);
      charged = paying;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      for (const q of toQueue) if (!q.refused) fail(q.c.index, err);
    }
  }
  const inserting = toQueue.filter((q) => outcomes[q.c.index] === undefined);

  let duplicates: number[] = [];
  if (inserting.length > 0) {
    try {
      duplicates = (await scope.emails.insertMany(inserting.map((q) => q.doc))).duplicates;
    } catch (err) {
      // Nothing is known to be queued: the charge goes back, and a failed write sends nothing.
      if (charged > 0) await quota!.refund(scope.tenant, charged);
      throw err;
    }
  }
  // A concurrent request with the same key won the insert: this message pays nothing and replays it.
  const lost = new Set(duplicates);
  const lostPaying = duplicates.filter((i) => !inserting[i]!.refused).length;
  if (lostPaying > 0 && charged > 0) await quota!.refund(scope.tenant, lostPaying);
  const stored: EmailDoc[] = [];
  const winners = new Map<string, EmailDoc>();
  inserting.forEach((q, i) => {
    if (lost.has(i)) return;
    const doc = { ...q.doc, tenant: scope.tenant } as EmailDoc;
    stored.push(doc);
    winners.set(doc.idem_key, doc);
    outcomes[q.c.index] = { email: emailView(doc), replayed: false, refused: q.refused };
  });
  // The losers of a race, and keys given again later in this batch, are decided by the email that holds the key.
  const pendingKeys = [
    ...inserting.filter((_, i) => lost.has(i)).map((q) => q.c),
    ...laterWithKey,
  ];
  const missing = unique(pendingKeys.map((c) => `key:${c.idempotencyKey}`).filter((k) => !winners.has(k)));
  for (const d of await emailsWithKeys(scope, missing)) winners.set(d.idem_key, d);
  // A key whose first message was not stored (its template unknown, the quota spent): the later ones are
  // decided on their own, as the same requests sent one after the other would be.
  const undecided: Candidate[] = [];
  for (const c of pendingKeys) {
    const winner = winners.get(`key:${c.idempotencyKey}`);
    if (!winner) {
      // The same message again fails as the first did (a retry of it in the same instant would).
      const first = firstWithKey.get(`key:${c.idempotencyKey}`);
      const firstOutcome = first && outcomes[first.index];
      if (first && first.hash === c.hash && firstOutcome && "error" in firstOutcome) outcomes[c.index] = firstOutcome;
      else undecided.push(c);
      continue;
    }
    try {
      outcomes[c.index] = replay(winner, c.hash);
    } catch (err) {
      fail(c.index, err);
    }
  }

  for (const doc of stored) emailsByStatus.inc({ status: doc.status });
  await deps.relay.afterWriteMany(stored);
  if (undecided.length > 0) {
    const again = await sendEmails(deps, scope, undecided.map((c) => inputs[c.index]!), signal);
    undecided.forEach((c, i) => (outcomes[c.index] = again[i]));
  }
  return outcomes.map((o, i) => {
    if (!o) throw new Error(`message ${i} of the batch was not decided`);
    return o;
  });
}

/**
 * The emails holding these keys (`key:<key>`). One key, as a single send has,
 * is an equality query: FerretDB evaluates `$in` in Go after fetching the
 * whole collection, where it pushes equality down to PostgreSQL.
 */
async function emailsWithKeys(scope: Scope, keys: readonly string[]): Promise<EmailDoc[]> {
  if (keys.length === 0) return [];
  if (keys.length === 1) {
    const found = await scope.emails.findOne({ idem_key: keys[0]! });
    return found ? [found] : [];
  }
  return scope.emails.find({ idem_key: { $in: [...keys] } });
}

function validate(input: SendEmailInput, index: number): Candidate {
  const templateSlug = validateSlug(input.templateSlug);
  const to = validateRecipient(input.to);
  const variables = validateVariables(input.variables);
  const idempotencyKey = validateIdempotencyKey(input.idempotencyKey);
  const sender = validateSender(input);
  return { index, templateSlug, to, variables, idempotencyKey, sender, hash: requestHash({ templateSlug, to, variables, ...sender }) };
}

function emailDoc(
  deps: Deps,
  scope: Scope,
  c: Candidate,
  template: CompiledTemplate,
  answer: AddressAnswer | undefined,
  refused: PublicErrorCode | undefined,
  category: string,
  now: number,
): Omit<EmailDoc, "tenant"> {
  const id = newId("eml");
  return {
    _id: id,
    to: c.to,
    to_key: recipientKey(c.to),
    subscriber_id: answer?.recipient?.subscriberId ?? "",
    template_id: template.templateId,
    template_slug: template.slug,
    template_version: template.version,
    variables_json: JSON.stringify(c.variables),
    ...(c.sender.fromEmail ? { from_email: c.sender.fromEmail } : {}),
    ...(c.sender.fromName !== undefined ? { from_name: c.sender.fromName } : {}),
    ...(c.sender.replyTo ? { reply_to: c.sender.replyTo } : {}),
    idempotency_key: c.idempotencyKey ?? "",
    idem_key: c.idempotencyKey !== undefined ? `key:${c.idempotencyKey}` : `none:${id}`,
    request_hash: c.hash,
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
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** The template of a candidate, when its lookup succeeded. */
function templateOf(templates: Map<string, Looked<CompiledTemplate>>, c: Candidate): CompiledTemplate | undefined {
  const t = templates.get(c.templateSlug);
  return t && "value" in t ? t.value : undefined;
}

type Looked<V> = { value: V } | { error: AppError };

/** `look` once per distinct value, all at once; an AppError is that value's answer, anything else fails the call. */
async function lookupEach<V>(values: readonly string[], look: (value: string) => Promise<V>): Promise<Map<string, Looked<V>>> {
  const settled = await Promise.allSettled(values.map(look));
  const found = new Map<string, Looked<V>>();
  settled.forEach((s, i) => {
    if (s.status === "fulfilled") found.set(values[i]!, { value: s.value });
    else if (s.reason instanceof AppError) found.set(values[i]!, { error: s.reason });
    else throw s.reason;
  });
  return found;
}

/** From and Reply-To as given: addresses by the one address rule, a display name without line breaks. */
function validateSender(input: SendEmailInput): Sender {
  const given = (value: unknown) => value !== undefined && value !== null && value !== "";
  const sender: Sender = {};
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

/**
 * What the subscribers service says about each recipient (by lower-cased
 * address), in one call per 1,000 addresses (one address: GetRecipientByEmail): their subscriber id, so that an
 * email queued for a subscriber is erased with them even before it is sent,
 * and whether they may be mailed. Best effort: without an answer in time the
 * map is empty, the emails are queued and each send attempt asks again.
 */
async function recipientsAtSend(deps: Deps, tenant: string, addresses: readonly string[], signal: AbortSignal | undefined): Promise<Map<string, AddressAnswer>> {
  const directory = deps.recipients;
  if (!directory || addresses.length === 0) return new Map();
  const timeout = AbortSignal.timeout(LOOKUP_AT_SEND_MS);
  const bounded = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    // One address (a single send): the single lookup, an equality query in the subscribers service.
    if (addresses.length === 1) return new Map([[addresses[0]!, await directory.lookup(tenant, addresses[0]!, bounded)]]);
    return await directory.lookupMany(tenant, addresses, bounded);
  } catch (err) {
    deps.logger.warn({ addresses: addresses.length, err: err instanceof Error ? err.message : String(err) }, "recipient lookup at send failed; asked again at the send attempt");
    return new Map();
  }
}

async function resolveTemplate(deps: Deps, scope: Scope, slug: string, signal: AbortSignal | undefined): Promise<CompiledTemplate> {
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
