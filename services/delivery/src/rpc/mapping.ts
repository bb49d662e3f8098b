import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { delivery } from "@emailsvc/proto";
import type { EmailStatus, EmailView } from "../domain/email.js";
import { publicErrorCode, type PublicErrorCode } from "../domain/provider.js";
import type { SandboxMessage } from "../storage/sandbox-messages.js";

// proto <-> domain only; no rules here.

const STATUS_TO_PROTO: Record<EmailStatus, delivery.EmailStatus> = {
  queued: delivery.EmailStatus.QUEUED,
  sent: delivery.EmailStatus.SENT,
  failed: delivery.EmailStatus.FAILED,
  bounced: delivery.EmailStatus.BOUNCED,
  delivered: delivery.EmailStatus.DELIVERED,
};

/** Each public error code as the proto enum carries it (the enum's value names are the codes, upper-cased). */
export const FAILURE_REASON_TO_PROTO: Record<PublicErrorCode, delivery.FailureReason> = {
  template_unavailable: delivery.FailureReason.TEMPLATE_UNAVAILABLE,
  template_render_failed: delivery.FailureReason.TEMPLATE_RENDER_FAILED,
  recipient_rejected: delivery.FailureReason.RECIPIENT_REJECTED,
  message_rejected: delivery.FailureReason.MESSAGE_REJECTED,
  attempts_exhausted: delivery.FailureReason.ATTEMPTS_EXHAUSTED,
  relay_unavailable: delivery.FailureReason.RELAY_UNAVAILABLE,
  service_unavailable: delivery.FailureReason.SERVICE_UNAVAILABLE,
  recipient_unsubscribed: delivery.FailureReason.RECIPIENT_UNSUBSCRIBED,
  recipient_bounced: delivery.FailureReason.RECIPIENT_BOUNCED,
  recipient_complained: delivery.FailureReason.RECIPIENT_COMPLAINED,
  recipient_suppressed: delivery.FailureReason.RECIPIENT_SUPPRESSED,
  recipient_erased: delivery.FailureReason.RECIPIENT_ERASED,
  campaign_cancelled: delivery.FailureReason.CAMPAIGN_CANCELLED,
};

/** The reason of a failed email's `error` (unspecified for any other). */
export function failureReasonToProto(error: string): delivery.FailureReason {
  const code = error ? publicErrorCode(error) : undefined;
  return code ? FAILURE_REASON_TO_PROTO[code] : delivery.FailureReason.UNSPECIFIED;
}

const ts = (ms: number | null) => (ms === null ? undefined : timestampFromMs(ms));

export function emailToProto(view: EmailView): delivery.Email {
  return create(delivery.EmailSchema, {
    id: view.id,
    status: STATUS_TO_PROTO[view.status],
    to: view.to,
    templateId: view.templateId,
    templateSlug: view.templateSlug,
    templateVersion: view.templateVersion,
    idempotencyKey: view.idempotencyKey,
    provider: view.provider,
    messageId: view.messageId,
    error: view.error,
    failureReason: view.status === "failed" ? failureReasonToProto(view.error) : delivery.FailureReason.UNSPECIFIED,
    attempts: view.attempts,
    queuedAt: ts(view.queuedAt),
    sentAt: ts(view.sentAt),
    failedAt: ts(view.failedAt),
    updatedAt: ts(view.updatedAt),
  });
}

export function sandboxMessageToProto(message: SandboxMessage): delivery.SandboxMessage {
  return create(delivery.SandboxMessageSchema, {
    emailId: message.emailId,
    from: message.from,
    to: message.to,
    subject: message.subject,
    html: message.html,
    text: message.text,
    headers: message.headers,
    capturedAt: timestampFromMs(message.capturedAt),
  });
}
