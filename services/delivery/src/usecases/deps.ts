import type { OutboxAfterWrite } from "@emailsvc/outbox";
import type { TestModeQuota } from "@emailsvc/ratelimit";
import type { Logger } from "@emailsvc/telemetry";
import type { CallContext } from "@emailsvc/tenancy";
import { notFound } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import type { EmailView, ProviderName } from "../domain/email.js";
import type { RecipientDirectory } from "../domain/recipients.js";
import type { TemplateSource } from "../domain/templates.js";
import { failureReasonOf, historyOf, type EmailDoc, type OutboxEntry } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

/** Carries out an email's outbox right after the write that filled it (@emailsvc/outbox). */
export type OutboxFlusher = OutboxAfterWrite<EmailDoc>;

/**
 * What the request-side use cases need besides their tenant's collections;
 * built once in server.ts. No collection here: data is reached through a
 * Scope only.
 */
export interface Deps {
  relay: OutboxFlusher;
  templates: TemplateSource;
  /** The subscribers service: links an email to its recipient's subscriber at SendEmail (best effort). */
  recipients?: RecipientDirectory | undefined;
  logger: Logger;
  /** The provider live-mode emails go through (EMAIL_PROVIDER); test mode is always the sandbox. */
  liveProvider: ProviderName;
  now: () => number;
  /** TEST_MODE_DAILY_LIMIT: each test-mode email is charged to its account's quota; absent: none. */
  testModeQuota?: TestModeQuota;
}

/** One call: its context and its tenant's collections (the only ones a use case gets). */
export interface Scope extends TenantRepositories {
  call: CallContext;
}

export { providerForTenant } from "../domain/email.js";

export function outboxEntry(at: number, topic: OutboxEntry["topic"], status?: OutboxEntry["status"]): OutboxEntry {
  return { id: newId("evt"), topic, at, ...(status ? { status } : {}) };
}

export async function loadEmail(scope: Scope, id: string): Promise<EmailDoc> {
  const doc = await scope.emails.findOne({ _id: id });
  if (!doc) throw notFound("email");
  return doc;
}

export function emailView(doc: EmailDoc): EmailView {
  return {
    id: doc._id,
    status: doc.status,
    to: doc.to,
    templateId: doc.template_id,
    templateSlug: doc.template_slug,
    templateVersion: doc.template_version,
    idempotencyKey: doc.idempotency_key,
    provider: doc.provider,
    messageId: doc.message_id,
    providerMessageId: doc.provider_message_id ?? "",
    error: doc.error,
    failureReason: failureReasonOf(doc),
    attempts: doc.attempts,
    queuedAt: doc.queued_at,
    sentAt: doc.sent_at,
    failedAt: doc.failed_at,
    updatedAt: doc.updated_at,
    bounce: doc.bounce,
    history: historyOf(doc),
    nextAttemptAt: doc.status === "deferred" && doc.next_attempt_at ? doc.next_attempt_at : null,
  };
}


