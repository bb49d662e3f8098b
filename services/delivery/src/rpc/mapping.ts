import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { delivery } from "@emailsvc/proto";
import type { EmailStatus, EmailView } from "../domain/email.js";
import type { SandboxMessageDoc } from "../storage/documents.js";

// proto <-> domain only; no rules here.

const STATUS_TO_PROTO: Record<EmailStatus, delivery.EmailStatus> = {
  queued: delivery.EmailStatus.QUEUED,
  sent: delivery.EmailStatus.SENT,
  failed: delivery.EmailStatus.FAILED,
  bounced: delivery.EmailStatus.BOUNCED,
  delivered: delivery.EmailStatus.DELIVERED,
};

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
    failureReason: delivery.failureReasonOfCode(view.failureReason),
    attempts: view.attempts,
    queuedAt: ts(view.queuedAt),
    sentAt: ts(view.sentAt),
    failedAt: ts(view.failedAt),
    updatedAt: ts(view.updatedAt),
  });
}

export function sandboxMessageToProto(doc: SandboxMessageDoc): delivery.SandboxMessage {
  return create(delivery.SandboxMessageSchema, {
    emailId: doc._id,
    from: doc.from,
    to: doc.to,
    subject: doc.subject,
    html: doc.html,
    text: doc.text,
    headers: doc.headers,
    capturedAt: timestampFromMs(doc.captured_at),
  });
}
