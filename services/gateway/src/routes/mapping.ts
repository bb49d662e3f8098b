import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { delivery, SubscriberStatus, templates, type Subscriber, type SubscriberEvent, type Tag } from "@emailsvc/proto";

// Proto messages <-> the REST API's snake_case JSON. Only mapping here: the
// rules live in the services.

export interface SubscriberJson {
  id: string;
  email: string;
  status: string;
  metadata: JsonObject;
  tags: string[];
  created_at: string;
  updated_at: string;
}

export interface TagJson {
  id: string;
  name: string;
  description: string;
  is_public: boolean;
  created_at: string;
  updated_at: string;
}

export interface SubscriberEventJson {
  id: string;
  type: string;
  occurred_at: string;
  actor: string;
  data: JsonObject;
}

const STATUS_TO_JSON: Partial<Record<SubscriberStatus, string>> = {
  [SubscriberStatus.ACTIVE]: "active",
  [SubscriberStatus.UNSUBSCRIBED]: "unsubscribed",
  [SubscriberStatus.BOUNCED]: "bounced",
  [SubscriberStatus.COMPLAINED]: "complained",
};

const STATUS_FROM_JSON: Record<string, SubscriberStatus> = {
  active: SubscriberStatus.ACTIVE,
  unsubscribed: SubscriberStatus.UNSUBSCRIBED,
  bounced: SubscriberStatus.BOUNCED,
  complained: SubscriberStatus.COMPLAINED,
};

/** `undefined` (not given) -> UNSPECIFIED, which the service reads as "no filter" / "no change". */
export function statusFromJson(value: unknown): SubscriberStatus {
  if (value === undefined) return SubscriberStatus.UNSPECIFIED;
  const status = STATUS_FROM_JSON[String(value)];
  // Bodies and queries are validated against the same enum before this runs.
  if (status === undefined) throw new Error(`unknown status ${String(value)}`);
  return status;
}

function statusToJson(status: SubscriberStatus): string {
  const value = STATUS_TO_JSON[status];
  if (value === undefined) throw new Error(`the service returned subscriber status ${status}`);
  return value;
}

/** RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T10:30:00.000Z`. */
function rfc3339(ts: Timestamp | undefined, field: string): string {
  if (!ts) throw new Error(`the service returned no ${field}`);
  return timestampDate(ts).toISOString();
}

/** An absent timestamp (not happened yet) is null. */
function rfc3339OrNull(ts: Timestamp | undefined): string | null {
  return ts ? timestampDate(ts).toISOString() : null;
}

/** Proto's "" for "none" becomes null. */
function stringOrNull(value: string): string | null {
  return value === "" ? null : value;
}

export function subscriberJson(s: Subscriber | undefined): SubscriberJson {
  if (!s) throw new Error("the service returned no subscriber");
  return {
    id: s.id,
    email: s.email,
    status: statusToJson(s.status),
    metadata: s.metadata ?? {},
    tags: s.tags,
    created_at: rfc3339(s.createdAt, "created_at"),
    updated_at: rfc3339(s.updatedAt, "updated_at"),
  };
}

export function tagJson(t: Tag | undefined): TagJson {
  if (!t) throw new Error("the service returned no tag");
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    is_public: t.isPublic,
    created_at: rfc3339(t.createdAt, "created_at"),
    updated_at: rfc3339(t.updatedAt, "updated_at"),
  };
}

export function subscriberEventJson(e: SubscriberEvent): SubscriberEventJson {
  return {
    id: e.id,
    type: e.type,
    occurred_at: rfc3339(e.occurredAt, "occurred_at"),
    actor: e.actor,
    data: e.data ?? {},
  };
}

/** The service's "" on the last page becomes null. */
export function nextCursor(value: string): string | null {
  return value === "" ? null : value;
}

// Templates

export interface TemplateSummaryJson {
  id: string;
  slug: string;
  name: string;
  subject: string;
  category: string;
  version: number;
  variables: string[];
  created_at: string;
  updated_at: string;
}

export interface TemplateJson extends TemplateSummaryJson {
  mjml_content: string;
}

export interface TemplatePreviewJson {
  html: string;
  subject: string;
  text: string;
  missing_variables: string[];
}

const CATEGORY_TO_JSON: Partial<Record<templates.TemplateCategory, string>> = {
  [templates.TemplateCategory.TRANSACTIONAL]: "transactional",
  [templates.TemplateCategory.MARKETING]: "marketing",
};

const CATEGORY_FROM_JSON: Record<string, templates.TemplateCategory> = {
  transactional: templates.TemplateCategory.TRANSACTIONAL,
  marketing: templates.TemplateCategory.MARKETING,
};

/** `undefined` (not given) -> UNSPECIFIED, which the service reads as "no change". */
export function categoryFromJson(value: unknown): templates.TemplateCategory {
  if (value === undefined) return templates.TemplateCategory.UNSPECIFIED;
  const category = CATEGORY_FROM_JSON[String(value)];
  // Bodies are validated against the same enum before this runs.
  if (category === undefined) throw new Error(`unknown template category ${String(value)}`);
  return category;
}

function categoryToJson(category: templates.TemplateCategory): string {
  const value = CATEGORY_TO_JSON[category];
  if (value === undefined) throw new Error(`the service returned template category ${category}`);
  return value;
}

/** A template without its MJML, as lists show it. */
export function templateSummaryJson(t: templates.Template): TemplateSummaryJson {
  return {
    id: t.id,
    slug: t.slug,
    name: t.name,
    subject: t.subject,
    category: categoryToJson(t.category),
    version: t.version,
    variables: t.variables,
    created_at: rfc3339(t.createdAt, "created_at"),
    updated_at: rfc3339(t.updatedAt, "updated_at"),
  };
}

export function templateJson(t: templates.Template | undefined): TemplateJson {
  if (!t) throw new Error("the service returned no template");
  return { ...templateSummaryJson(t), mjml_content: t.mjmlContent };
}

export function templatePreviewJson(p: templates.PreviewTemplateResponse): TemplatePreviewJson {
  return { html: p.html, subject: p.subject, text: p.text, missing_variables: p.missingVariables };
}

// Emails

export interface EmailJson {
  id: string;
  status: string;
  to: string;
  template_id: string;
  template_slug: string;
  template_version: number;
  idempotency_key: string | null;
  provider: string | null;
  message_id: string | null;
  error: string | null;
  attempts: number;
  queued_at: string;
  sent_at: string | null;
  failed_at: string | null;
  updated_at: string;
}

export interface EmailQueuedJson {
  id: string;
  status: "queued";
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
};

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
    to: e.to,
    template_id: e.templateId,
    template_slug: e.templateSlug,
    template_version: e.templateVersion,
    idempotency_key: stringOrNull(e.idempotencyKey),
    provider: stringOrNull(e.provider),
    message_id: stringOrNull(e.messageId),
    error: stringOrNull(e.error),
    attempts: e.attempts,
    queued_at: rfc3339(e.queuedAt, "queued_at"),
    sent_at: rfc3339OrNull(e.sentAt),
    failed_at: rfc3339OrNull(e.failedAt),
    updated_at: rfc3339(e.updatedAt, "updated_at"),
  };
}

/**
 * The answer to a send: the email as it was accepted, built only from fields
 * that never change afterwards (status is `queued` by definition). So a replay
 * is byte-for-byte the original answer even when the service hands back the
 * email's current state (sent, failed, …).
 */
export function emailQueuedJson(e: delivery.Email | undefined): EmailQueuedJson {
  if (!e) throw new Error("the service returned no email");
  return {
    id: e.id,
    status: "queued",
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
