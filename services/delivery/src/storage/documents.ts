import { OUTBOX_INDEX, type OutboxDoc, type OutboxEntry as KitOutboxEntry } from "@emailsvc/outbox";
import type { Doc } from "@emailsvc/storage";
import type { Bounce, EmailStatus, StatusChange } from "../domain/email.js";
import type { DnsRecordView, SenderDomainStatus } from "../domain/sender-domain.js";
import { PUBLIC_ERRORS, type PublicErrorCode } from "../domain/provider.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// per-tenant index starts with it too, so no query can reach across tenants.
// The outbox relay's and the stalled-mail sweeps work across tenants (see
// repositories.ts) and have their own indexes.

/**
 * A bus event a change implies, kept inside the changed email until published
 * (the outbox of @emailsvc/outbox). `id` is the event's event_id (consumers
 * dedupe by it).
 */
export interface OutboxEntry extends KitOutboxEntry {
  topic: "email.send.requested" | "email.status";
  /** For email.status: the status the email moved to. */
  status?: EmailStatus;
}

export interface EmailDoc extends OutboxDoc<OutboxEntry> {
  /** Recipient as given (trimmed); "" once erased. */
  to: string;
  /** Lower-cased recipient, for lookups by address; `erased:<email id>` once erased. */
  to_key: string;
  /**
   * The subscriber the recipient was when the email was queued or sent ("" if
   * none, or not known yet): `subscriber.deleted` erases the emails linked here.
   * Set once (at SendEmail, else at the first send attempt) and removed only
   * by the erasure. Older records may lack the field.
   */
  subscriber_id?: string;
  /** The subject as rendered, kept when the email is sent (for the subscriber's export); absent before, and once erased. */
  subject?: string;
  /** The campaign the email belongs to ("" or absent for one sent through SendEmail or a trigger). */
  campaign_id?: string;
  /** SendEmail's From address (absent: EMAIL_FROM's); its domain was a verified sending domain of a live tenant when queued. */
  from_email?: string;
  /** SendEmail's From display name (absent: EMAIL_FROM's name, or none with from_email). */
  from_name?: string;
  /** SendEmail's Reply-To (absent: none). */
  reply_to?: string;
  template_id: string;
  template_slug: string;
  /** The version the email was queued with; it is rendered with that one. */
  template_version: number;
  /**
   * The caller's variables as JSON text: keys may hold `.` or `$` and values
   * nested arrays, which MongoDB/FerretDB refuse as stored fields. "{}" once erased.
   */
  variables_json: string;
  /** The key as given, or "" without one (and once erased: the caller's key may name the person). */
  idempotency_key: string;
  /**
   * Unique per tenant: `key:<idempotency key>`, or `none:<email id>` when the
   * request had no key (a missing field would count as null in a unique index,
   * and every keyless email would collide), or once erased.
   */
  idem_key: string;
  /** sha256 of the canonical request (address and variables included); a replay must match it. "" once erased. */
  request_hash: string;
  status: EmailStatus;
  /** The provider that sent it (or will: test-mode emails always use the sandbox). */
  provider: string;
  /** Message-ID header of the sent message ("" until sent). */
  message_id: string;
  /** The provider's own id of the sent message (SES's MessageId); absent until sent, and from providers that give none. */
  provider_message_id?: string;
  /**
   * Why it failed, as the API shows it ("" otherwise): a stable code, with the
   * relay's reply (addresses removed) where there is one, e.g.
   * `recipient_rejected: 550 5.1.1 <recipient>: User unknown` (see domain/provider.ts).
   * For people: code reads `failure_reason`.
   */
  error: string;
  /**
   * Why it failed, for code: the FailureReason's code (`recipient_rejected`;
   * delivery.FAILURE_REASON_CODES), set with `error` by every write that fails
   * an email; absent otherwise. Emails failed before the field existed lack
   * it: `failureReasonOf` (below) derives theirs from `error` when
   * they are read, the one place that reads that text.
   */
  failure_reason?: PublicErrorCode;
  /** What went wrong inside the last failed attempt, for operators only (never in the API; no addresses). */
  last_error: string;
  /** Send attempts started (claims). */
  attempts: number;
  /** Attempts the server answered "not now" to: counted toward the cap. */
  transient_failures: number;
  /**
   * A send attempt holds the email until this time (ms); 0 when free. The
   * attempt renews it while it runs; a consumer that died mid-send leaves it
   * to run out within one lease (seconds), then the redelivered event sends
   * the email again.
   */
  lease_until: number;
  /** Which attempt holds the lease (its release and result writes are guarded by it). */
  lease_token: string;
  queued_at: number;
  sent_at: number | null;
  failed_at: number | null;
  /**
   * Every status change with its time (pushed by the write that makes it), but
   * `sent`: its change is `sent_at` (historyOf puts it back in its place), so
   * the send's write, once per email, carries no history. Absent on emails
   * stored before it existed.
   */
  status_history?: StatusChange[];
  /** Set when the email bounced: hard or soft, and the relay's reply (addresses removed). */
  bounce?: Bounce;
  /** When a deferred email is due for its next attempt (ms); 0 or absent otherwise. The retry sweep reads it. */
  next_attempt_at?: number;
  /** A deferred email the retry sweep asked to be sent again (cleared by its next deferral): only then may an attempt claim it. */
  retry_requested?: boolean;
}

/**
 * The fields an email record leaves out while they hold these values (every
 * campaign email until its outcome, and most of them after: a campaign has no
 * variables, idempotency key or request hash; nothing failed; nothing in the
 * outbox). Each was written at intake and again at the outcome, in every
 * record; readers get them back from `withEmailDefaults` (storage/email-records.ts
 * applies it to everything read), so every reader sees the record whole, as
 * before. Records stored before (with every field) read the same. No query
 * asks for one of these values: a filter `{ field: "" }` would not match a
 * record that left the field out (`null` would, on both stores; `""` does not).
 */
export const EMAIL_DEFAULTS = {
  variables_json: "{}",
  idempotency_key: "",
  request_hash: "",
  message_id: "",
  error: "",
  last_error: "",
  transient_failures: 0,
  sent_at: null,
  failed_at: null,
  outbox: [],
  outbox_pending: false,
} as const satisfies Partial<EmailDoc>;

/** The fields EMAIL_DEFAULTS covers. */
export type DefaultedEmailField = keyof typeof EMAIL_DEFAULTS;

/** An email record as stored: the defaulted fields may be absent, and `to` when it is `to_key`. */
export type StoredEmailDoc = Omit<EmailDoc, DefaultedEmailField | "to"> & Partial<Pick<EmailDoc, DefaultedEmailField | "to">>;

const DEFAULTED = Object.keys(EMAIL_DEFAULTS) as DefaultedEmailField[];

/** The record whole: each defaulted field it left out, with its value (a new object; the record itself when it lacks none). */
export function withEmailDefaults(doc: StoredEmailDoc): EmailDoc {
  let lacks = doc.to === undefined;
  for (let i = 0; !lacks && i < DEFAULTED.length; i += 1) lacks = doc[DEFAULTED[i]!] === undefined;
  if (!lacks) return doc as EmailDoc;
  // Every defaulted value is a scalar but `outbox`, a new array each time: no two records share one.
  // `to` left out: the address as given was its lower-cased key (see withoutEmailDefaults).
  return { ...EMAIL_DEFAULTS, outbox: [], ...doc, to: doc.to ?? doc.to_key } as EmailDoc;
}

/**
 * The record as stored: without the defaulted fields that hold their default,
 * and without `to` when it is its `to_key` (an address given in lower case, as
 * a campaign's mostly are: no query asks for `to`) (a new object).
 */
export function withoutEmailDefaults(doc: EmailDoc): StoredEmailDoc {
  const stored: Record<string, unknown> = {};
  for (const field in doc) {
    const value = (doc as unknown as Record<string, unknown>)[field];
    if (field === "to" && value === doc.to_key) continue;
    if (Object.hasOwn(EMAIL_DEFAULTS, field)) {
      const fallback = EMAIL_DEFAULTS[field as DefaultedEmailField];
      if (value === fallback || (Array.isArray(value) && value.length === 0 && Array.isArray(fallback))) continue;
    }
    stored[field] = value;
  }
  return stored as StoredEmailDoc;
}

/**
 * Why a failed, suppressed or bounced email was not sent: its `failure_reason`. An email failed before
 * that field was written has only its `error` text, whose leading code is the
 * same vocabulary; it is read from there, here alone, each time such an email
 * is read (no migration: they are the older records, and their text never
 * changes). Undefined for an email that did not fail.
 */
export function failureReasonOf(doc: Pick<EmailDoc, "status" | "error" | "failure_reason">): PublicErrorCode | undefined {
  if (doc.status !== "failed" && doc.status !== "suppressed" && doc.status !== "bounced") return undefined;
  if (doc.failure_reason) return doc.failure_reason;
  const code = doc.error.split(":", 1)[0]!;
  return Object.hasOwn(PUBLIC_ERRORS, code) ? (code as PublicErrorCode) : undefined;
}

/** Statuses an email may have before it is sent: its `sent` change follows the last of them in its history. */
const BEFORE_SENT: ReadonlySet<EmailStatus> = new Set<EmailStatus>(["queued", "deferred"]);

/**
 * An email's status changes, as the API shows them. The `sent` change is
 * stored as `sent_at` only (settle's write pushes none since records of this
 * version; records from before hold it in their history, and nothing is
 * added then): it goes right after the changes made before sending (queued,
 * deferred) and before those after (delivered, bounced, complained). Emails
 * stored before the history existed: their latest status, at their latest change.
 */
export function historyOf(doc: Pick<EmailDoc, "status" | "status_history" | "sent_at" | "updated_at">): StatusChange[] {
  const stored = doc.status_history;
  if (stored === undefined) return [{ status: doc.status, at: doc.updated_at, detail: "" }];
  if (doc.sent_at === null || stored.some((change) => change.status === "sent")) return stored;
  let at = 0;
  while (at < stored.length && BEFORE_SENT.has(stored[at]!.status)) at += 1;
  return [...stored.slice(0, at), { status: "sent", at: doc.sent_at, detail: "" }, ...stored.slice(at)];
}

/** The parts of a kept message too large for a row held in memory. */
export interface SandboxBody {
  html: string;
  text: string;
  headers: Record<string, string>;
}

/**
 * A message the sandbox provider kept instead of sending (storage/sandbox-messages.ts).
 * Small: on the embedded store, whose documents live in memory, the body is
 * appended to a segment file of the tenant; on MongoDB it is `body`. Rows kept
 * before bodies moved out hold html, text and headers at the top level, and
 * rows kept before segments neither (the body is a file of its own).
 */
export interface SandboxMessageDoc extends Doc {
  /** `_id` is the email id: one message per email, a resend keeps the first. */
  tenant: string;
  from: string;
  to: string;
  subject: string;
  /** The body, when it is kept in the row (MongoDB); absent when it is in a segment file. */
  body?: SandboxBody;
  /** Where the body is on the embedded store: a segment file of the tenant (storage/sandbox-segments.ts), and its bytes there. */
  body_segment?: string;
  body_offset?: number;
  body_length?: number;
  captured_at: number;
}

/**
 * A campaign that was cancelled (from campaign.status_changed): its recipients
 * handed over but not yet given to the provider are not sent. `_id` is the
 * campaign id.
 */
export interface CancelledCampaignDoc extends Doc {
  tenant: string;
  cancelled_at: number;
}

export const CANCELLED_CAMPAIGN_INDEXES = [{ name: "by_tenant", fields: { tenant: 1, _id: 1 } }] as const;

/**
 * A campaign that is paused (from campaign.status_changed; removed by its next
 * change of status): its recipients not yet given to the provider are held,
 * neither sent nor failed, and campaigns hands them over again on resume.
 * `_id` is the campaign id.
 */
export interface PausedCampaignDoc extends Doc {
  tenant: string;
  paused_at: number;
}

export const PAUSED_CAMPAIGN_INDEXES = [{ name: "by_tenant", fields: { tenant: 1, _id: 1 } }] as const;

export const EMAIL_INDEXES = [
  // Idempotency: one email per key and tenant; decides concurrent requests with one key.
  { name: "idem_per_tenant", fields: { tenant: 1, idem_key: 1 }, unique: true },
  // ListEmails: the tenant's emails newest first (cursor pages on _id).
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
  // ListEmails with a status (the dashboard's log filtered by status), newest first.
  { name: "list_by_status", fields: { tenant: 1, status: 1, _id: 1 } },
  // ListEmails of one campaign (its failures: with a status too, checked on the campaign's emails), newest first.
  { name: "list_by_campaign", fields: { tenant: 1, campaign_id: 1, _id: 1 } },
  // Emails to one address.
  { name: "by_recipient", fields: { tenant: 1, to_key: 1 } },
  // CountEmails: the tenant's emails queued since a time (the dashboard's overview), grouped by status.
  { name: "count_since", fields: { tenant: 1, queued_at: 1 } },
  // Erasure (subscriber.deleted): the tenant's emails linked to one subscriber, paged on _id.
  { name: "erase_by_subscriber", fields: { tenant: 1, subscriber_id: 1, _id: 1 } },
  // A provider's notification (SES through SNS) names the email by the provider's message id only, and
  // no tenant: the lookup crosses tenants (repositories.ts, providerNotificationEmails), so the index
  // cannot start with the tenant.
  { name: "by_provider_message_id", fields: { provider_message_id: 1 } },
  // The outbox relay's sweep for changes whose events are not published yet.
  OUTBOX_INDEX,
  // The stalled sweep: queued emails nobody has touched for a while. A safety net only: both buses keep
  // their events across restarts, so it finds work after an event was lost anyway (a topic recreated,
  // a bus directory deleted).
  { name: "stalled", fields: { status: 1, updated_at: 1 } },
  // The retry sweep: deferred emails of every tenant whose next attempt is due, soonest first.
  { name: "due_retries", fields: { status: 1, next_attempt_at: 1 } },
] as const;

export const SANDBOX_INDEXES = [
  // GetSandboxMessage reads by `_id` and tenant; the tenant index keeps per-tenant scans (export, erasure)
  // and the cap's count cheap.
  { name: "by_tenant", fields: { tenant: 1, _id: 1 } },
  // The cap's trim: a tenant's messages in the order they were kept, oldest first (not by email id: a
  // campaign's ids are minted when its audience is copied, so a long-paused campaign sends old ids last).
  { name: "by_tenant_kept", fields: { tenant: 1, captured_at: 1 } },
  // The retention sweep: messages of every tenant kept before the cutoff, oldest first.
  { name: "expiry", fields: { captured_at: 1 } },
] as const;

/**
 * Where bodies are in segment files (the embedded store): a tenant's rows per
 * segment, counted from the index alone. The cap's trim takes the first kept
 * from the oldest segments, and a segment goes once it counts no row.
 */
export const SANDBOX_SEGMENT_INDEXES = [{ name: "by_tenant_segment", fields: { tenant: 1, body_segment: 1 } }] as const;

/** A DKIM key of a sending domain: its selector, its public key (the record's `p=`) and its private key sealed under SEALING_KEYS. */
export interface DkimKeyDoc {
  selector: string;
  public_key: string;
  /** `seal(ring, "dkim-private-key", pkcs8 pem)` (@emailsvc/tokens): never stored or shown in the clear. */
  private_key_sealed: string;
}

/** One record to publish and what the last check found: stored as the domain's view of it. */
export type SenderDnsRecordDoc = DnsRecordView;

/** A sending domain of a tenant (`_id` `sdm_…`). */
export interface SenderDomainDoc extends Doc {
  tenant: string;
  /** Lower case, ASCII, no trailing dot; unique per tenant. */
  name: string;
  status: SenderDomainStatus;
  records: SenderDnsRecordDoc[];
  rsa: DkimKeyDoc;
  ed25519: DkimKeyDoc;
  /** What is missing (pending), or why it failed; "" when verified. */
  failure_reason: string;
  created_at: number;
  /** When it last started pending (created, or verified again by hand after failing): the re-checks give up 72 h after. */
  pending_since: number;
  /** Checks since pending_since that found it not verified (the backoff's exponent). */
  checks: number;
  verified_at: number | null;
  last_checked_at: number | null;
  /** When the background re-check looks next; null when it will not (verified, failed). */
  next_check_at: number | null;
  /** When a verified domain's required records were first found missing (its grace runs from then); null or absent while they are seen. */
  failing_since?: number | null;
}

export const SENDER_DOMAIN_INDEXES = [
  // One domain per name and tenant (409 `sender_domain_exists`); also the lookup by a From's domain at send.
  { name: "name_per_tenant", fields: { tenant: 1, name: 1 }, unique: true },
  // ListSenderDomains: the tenant's domains in _id order (cursor pages on _id).
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
  // The re-check: pending domains of every tenant whose next check is due.
  { name: "recheck_due", fields: { next_check_at: 1 } },
] as const;
