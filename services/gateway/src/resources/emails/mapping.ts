import { delivery } from "@emailsvc/proto";
import { rfc3339, rfc3339OrNull, stringOrNull } from "../../routes/json.js";

// Proto emails -> the REST API's JSON. The rules live in the delivery service.

export interface EmailJson {
  id: string;
  status: string;
  /** null once erased. */
  to: string | null;
  template_id: string;
  template_slug: string;
  template_version: number;
  idempotency_key: string | null;
  provider: string | null;
  message_id: string | null;
  provider_message_id: string | null;
  error: string | null;
  attempts: number;
  queued_at: string;
  sent_at: string | null;
  failed_at: string | null;
  updated_at: string;
  bounce: { type: "hard" | "soft"; diagnostic: string } | null;
  history: Array<{ status: string; at: string; detail: string }>;
  next_attempt_at: string | null;
}

export interface EmailQueuedJson {
  id: string;
  status: "queued" | "suppressed";
  /** null when queued; the reason when refused at once. */
  error: string | null;
  to: string;
  template_id: string;
  template_slug: string;
  template_version: number;
  idempotency_key: string | null;
  queued_at: string;
}

export interface SandboxMessageJson {
  email_id: string;
  from: string;
  to: string;
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
  captured_at: string;
}

const EMAIL_STATUS_TO_JSON: Partial<Record<delivery.EmailStatus, string>> = {
  [delivery.EmailStatus.QUEUED]: "queued",
  [delivery.EmailStatus.SENT]: "sent",
  [delivery.EmailStatus.FAILED]: "failed",
  [delivery.EmailStatus.BOUNCED]: "bounced",
  [delivery.EmailStatus.DELIVERED]: "delivered",
  [delivery.EmailStatus.DEFERRED]: "deferred",
  [delivery.EmailStatus.COMPLAINED]: "complained",
  [delivery.EmailStatus.SUPPRESSED]: "suppressed",
};

/** A status a list is filtered by (validated against the same enum first); undefined: every status. */
export function emailStatusFromJson(value: string | undefined): delivery.EmailStatus {
  if (value === undefined) return delivery.EmailStatus.UNSPECIFIED;
  const found = Object.entries(EMAIL_STATUS_TO_JSON).find(([, json]) => json === value);
  if (!found) throw new Error(`unknown email status ${value}`);
  return Number(found[0]) as delivery.EmailStatus;
}

function bounceJson(bounce: delivery.Bounce | undefined): EmailJson["bounce"] {
  if (!bounce) return null;
  if (bounce.type === delivery.BounceType.HARD) return { type: "hard", diagnostic: bounce.diagnostic };
  if (bounce.type === delivery.BounceType.SOFT) return { type: "soft", diagnostic: bounce.diagnostic };
  throw new Error(`the service returned bounce type ${bounce.type}`);
}

function emailStatusToJson(status: delivery.EmailStatus): string {
  const value = EMAIL_STATUS_TO_JSON[status];
  if (value === undefined) throw new Error(`the service returned email status ${status}`);
  return value;
}

export function emailJson(e: delivery.Email | undefined): EmailJson {
  if (!e) throw new Error("the service returned no email");
  return {
    id: e.id,
    status: emailStatusToJson(e.status),
    to: stringOrNull(e.to),
    template_id: e.templateId,
    template_slug: e.templateSlug,
    template_version: e.templateVersion,
    idempotency_key: stringOrNull(e.idempotencyKey),
    provider: stringOrNull(e.provider),
    message_id: stringOrNull(e.messageId),
    provider_message_id: stringOrNull(e.providerMessageId),
    error: stringOrNull(e.error),
    attempts: e.attempts,
    queued_at: rfc3339(e.queuedAt, "queued_at"),
    sent_at: rfc3339OrNull(e.sentAt),
    failed_at: rfc3339OrNull(e.failedAt),
    updated_at: rfc3339(e.updatedAt, "updated_at"),
    bounce: bounceJson(e.bounce),
    history: e.history.map((change) => ({ status: emailStatusToJson(change.status), at: rfc3339(change.at, "history.at"), detail: change.detail })),
    next_attempt_at: rfc3339OrNull(e.nextAttemptAt),
  };
}

/**
 * The answer to a send: the email as it was accepted, built only from fields
 * that never change afterwards (status is `queued`, or `suppressed` with its
 * reason when delivery refused the recipient at once, which is final). So a
 * replay is byte-for-byte the original answer even when the service hands
 * back the email's current state (sent, failed, …).
 */
export function emailQueuedJson(e: delivery.Email | undefined, refused: boolean): EmailQueuedJson {
  if (!e) throw new Error("the service returned no email");
  return {
    id: e.id,
    status: refused ? "suppressed" : "queued",
    error: refused ? e.error : null,
    to: e.to,
    template_id: e.templateId,
    template_slug: e.templateSlug,
    template_version: e.templateVersion,
    idempotency_key: stringOrNull(e.idempotencyKey),
    queued_at: rfc3339(e.queuedAt, "queued_at"),
  };
}

export function sandboxMessageJson(m: delivery.SandboxMessage | undefined): SandboxMessageJson {
  if (!m) throw new Error("the service returned no sandbox message");
  return {
    email_id: m.emailId,
    from: m.from,
    to: m.to,
    subject: m.subject,
    html: m.html,
    text: m.text,
    headers: { ...m.headers },
    captured_at: rfc3339(m.capturedAt, "captured_at"),
  };
}
