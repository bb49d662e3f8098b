import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { invalid } from "@emailsvc/errors";
import { delivery } from "@emailsvc/proto";
import type { EmailStatus, EmailView } from "../domain/email.js";
import type { SandboxMessage } from "../storage/sandbox-messages.js";

// proto <-> domain only; no rules here.

const STATUS_TO_PROTO: Record<EmailStatus, delivery.EmailStatus> = {
  queued: delivery.EmailStatus.QUEUED,
  sent: delivery.EmailStatus.SENT,
  failed: delivery.EmailStatus.FAILED,
  bounced: delivery.EmailStatus.BOUNCED,
  delivered: delivery.EmailStatus.DELIVERED,
  deferred: delivery.EmailStatus.DEFERRED,
  complained: delivery.EmailStatus.COMPLAINED,
  suppressed: delivery.EmailStatus.SUPPRESSED,
};

/** A status a caller names (ListEmails' filter); an unknown number is a bad argument. */
export function statusFromProto(status: delivery.EmailStatus): EmailStatus {
  const found = (Object.entries(STATUS_TO_PROTO) as Array<[EmailStatus, delivery.EmailStatus]>).find(([, value]) => value === status);
  if (!found) throw invalid(`unknown email status ${status}`, [{ field: "status", description: "is not an email status" }]);
  return found[0];
}

export const statusToProto = (status: EmailStatus): delivery.EmailStatus => STATUS_TO_PROTO[status];

const BOUNCE_TO_PROTO = { hard: delivery.BounceType.HARD, soft: delivery.BounceType.SOFT } as const;

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
    providerMessageId: view.providerMessageId,
    error: view.error,
    failureReason: delivery.failureReasonOfCode(view.failureReason),
    attempts: view.attempts,
    queuedAt: ts(view.queuedAt),
    sentAt: ts(view.sentAt),
    failedAt: ts(view.failedAt),
    updatedAt: ts(view.updatedAt),
    bounce: view.bounce ? { type: BOUNCE_TO_PROTO[view.bounce.type], diagnostic: view.bounce.diagnostic } : undefined,
    history: view.history.map((change) => ({ status: STATUS_TO_PROTO[change.status], at: timestampFromMs(change.at), detail: change.detail })),
    nextAttemptAt: ts(view.nextAttemptAt),
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
