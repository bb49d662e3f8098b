import { outboxWrites, type Outbox } from "@emailsvc/outbox";
import type { CallContext, Logger } from "@emailsvc/runtime";
import { newId, notFound } from "@emailsvc/runtime";
import type { Scoped } from "@emailsvc/storage";
import type { EmailView, ProviderName } from "../domain/email.js";
import type { RecipientDirectory } from "../domain/recipients.js";
import type { TemplateSource } from "../domain/templates.js";
import type { EmailDoc, EmailEntry } from "../storage/documents.js";
import type { Repositories } from "../storage/repositories.js";

/**
 * What the request-side use cases need besides their tenant's repositories;
 * built once in server.ts. No collection here: a use case reads and writes
 * only through the tenant-scoped repositories of its Scope.
 */
export interface Deps {
  /** Carries out a change's outbox right after its write (the sweep is not theirs). */
  outbox: Pick<Outbox<EmailDoc>, "afterWrite">;
  templates: TemplateSource;
  /** The subscribers service: links an email to its recipient's subscriber at SendEmail (best effort). */
  recipients?: RecipientDirectory | undefined;
  logger: Logger;
  /** The provider live-mode emails go through (EMAIL_PROVIDER); test mode is always the sandbox. */
  liveProvider: ProviderName;
  now: () => number;
}

/** One call's tenant-scoped repositories, with the call (tenant, actor) they were opened for. */
export interface Scope extends Repositories {
  call: CallContext;
  /** `<account id>:<mode>` of the call. */
  tenant: string;
}

/** The outbox parts of an email's writes, checked against its fields. */
export const emailWrites = outboxWrites<Scoped<EmailDoc>>();

/** Test-mode keys never reach a real recipient: whatever EMAIL_PROVIDER says, their mail goes to the sandbox. */
export function providerForTenant(tenant: string, liveProvider: ProviderName): ProviderName {
  return tenant.endsWith(":test") ? "sandbox" : liveProvider;
}

export function outboxEntry(at: number, topic: EmailEntry["topic"], status?: EmailEntry["status"]): EmailEntry {
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
    error: doc.error,
    attempts: doc.attempts,
    queuedAt: doc.queued_at,
    sentAt: doc.sent_at,
    failedAt: doc.failed_at,
    updatedAt: doc.updated_at,
  };
}

