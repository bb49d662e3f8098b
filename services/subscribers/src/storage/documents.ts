import type { OutboxDoc, OutboxEntry } from "@emailsvc/outbox";
import type { TenantDoc } from "@emailsvc/storage";
import type { Metadata, Status } from "../domain/subscriber.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index starts with it too, so no query can reach across tenants; the outbox
// sweep's index is the one exception (see messaging/outbox.ts).

/** The bus event a change implies, by ids only (the registry's topics; packages/events). */
export type SubscriberBusEvent =
  | { topic: "subscriber.created"; tag_ids: string[] }
  | { topic: "subscriber.status_changed"; from: string; to: string }
  | { topic: "subscriber.tag_added"; tag_id: string }
  | { topic: "subscriber.tag_removed"; tag_id: string }
  | { topic: "subscriber.deleted" };

/** A pending side effect of a change, kept inside the changed document (the outbox kit's entry). */
export interface SubscriberEntry extends OutboxEntry {
  /** `id` is the audit record's `_id` and the bus event's event_id. */
  type: string;
  actor: string;
  /** Audit-trail data (ids and tag names; never the address or metadata). */
  audit: Record<string, unknown> | null;
  /** Bus event, by ids only; null when the change is not published. */
  bus: SubscriberBusEvent | null;
}

export interface SubscriberDoc extends OutboxDoc<SubscriberEntry> {
  email: string;
  /** Lower-cased address: unique per tenant, used for lookup (no collation on FerretDB). */
  email_key: string;
  status: Status;
  metadata: Metadata;
  tag_ids: string[];
  created_at: number;
  /**
   * A deleted subscriber is first wiped to a tombstone holding ids only, so the
   * subscriber.deleted event can leave through the outbox; the outbox then
   * deletes the audit trail and the tombstone.
   */
  deleted: boolean;
}

export interface TagDoc extends TenantDoc {
  name: string;
  /** Lower-cased name: unique per tenant. */
  name_key: string;
  description: string;
  is_public: boolean;
  created_at: number;
  updated_at: number;
}

export interface AuditDoc extends TenantDoc {
  subscriber_id: string;
  type: string;
  occurred_at: number;
  actor: string;
  data: Record<string, unknown>;
}

export const SUBSCRIBER_INDEXES = [
  // Create and lookup by email; uniqueness per tenant, case-insensitive.
  { name: "email_per_tenant", fields: { tenant: 1, email_key: 1 }, unique: true },
  // List subscribers by id order (cursor pages), with and without a status filter.
  { name: "list_by_id", fields: { tenant: 1, deleted: 1, _id: 1 } },
  { name: "list_by_status", fields: { tenant: 1, deleted: 1, status: 1, _id: 1 } },
  // Tag deletion removes the tag from every member; campaigns count members.
  { name: "members_of_tag", fields: { tenant: 1, tag_ids: 1 } },
  // The outbox sweep (across tenants) for changes whose side effects are not done yet, and its backlog.
  { name: "outbox_pending", fields: { outbox_pending: 1 } },
] as const;

export const TAG_INDEXES = [
  // Create-or-get by name, unique per tenant, case-insensitive.
  { name: "name_per_tenant", fields: { tenant: 1, name_key: 1 }, unique: true },
  // List tags by id order.
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
] as const;

export const AUDIT_INDEXES = [
  // A subscriber's trail in order; erasure deletes by subscriber.
  { name: "trail_of_subscriber", fields: { tenant: 1, subscriber_id: 1, _id: 1 } },
] as const;
