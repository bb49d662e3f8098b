import type { CallContext, Logger } from "@emailsvc/runtime";
import { newId, notFound, tenantKey } from "@emailsvc/runtime";
import type { Collection } from "@emailsvc/storage";
import type { EmailView, ProviderName } from "../domain/email.js";
import type { RecipientDirectory } from "../domain/recipients.js";
import type { TemplateSource } from "../domain/templates.js";
import type { OutboxRelay } from "../messaging/outbox-relay.js";
import type { EmailDoc, OutboxEntry, SandboxMessageDoc } from "../storage/documents.js";
import { TenantCollection } from "@emailsvc/storage";

/** What the request-side use cases need; built once in server.ts. */
export interface Deps {
  emails: Collection<EmailDoc>;
  sandbox: Collection<SandboxMessageDoc>;
  relay: OutboxRelay;
  templates: TemplateSource;
  /** The subscribers service: links an email to its recipient's subscriber at SendEmail (best effort). */
  recipients?: RecipientDirectory | undefined;
  logger: Logger;
  /** The provider live-mode emails go through (EMAIL_PROVIDER); test mode is always the sandbox. */
  liveProvider: ProviderName;
  now: () => number;
}

/** The collections of one tenant, for one call. */
export interface Scope {
  call: CallContext;
  tenant: string;
  emails: TenantCollection<EmailDoc>;
  sandbox: TenantCollection<SandboxMessageDoc>;
}

export function scopeOf(deps: Pick<Deps, "emails" | "sandbox">, call: CallContext): Scope {
  const tenant = tenantKey(call.tenant);
  return {
    call,
    tenant,
    emails: new TenantCollection(deps.emails, tenant),
    sandbox: new TenantCollection(deps.sandbox, tenant),
  };
}

/** Test-mode keys never reach a real recipient: whatever EMAIL_PROVIDER says, their mail goes to the sandbox. */
export function providerForTenant(tenant: string, liveProvider: ProviderName): ProviderName {
  return tenant.endsWith(":test") ? "sandbox" : liveProvider;
}

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
    error: doc.error,
    attempts: doc.attempts,
    queuedAt: doc.queued_at,
    sentAt: doc.sent_at,
    failedAt: doc.failed_at,
    updatedAt: doc.updated_at,
  };
}

/** Publishes the events of a change now; the sweep retries them if this fails. */
export async function finish(relay: OutboxRelay, logger: Logger, doc: EmailDoc): Promise<void> {
  try {
    await relay.flush(doc);
  } catch (err) {
    logger.warn({ email_id: doc._id, err: err instanceof Error ? err.message : String(err) }, "outbox flush deferred to sweep");
  }
}
