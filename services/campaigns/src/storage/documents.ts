import type { IndexSpec } from "@emailsvc/storage";
import type { CampaignStatus } from "../domain/campaign.js";
import type { EventType } from "../domain/trigger.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index starts with it too, so no query can reach across tenants.

export interface CampaignDoc {
  _id: string;
  tenant: string;
  name: string;
  template_id: string;
  /**
   * The audience filter as given, in protobuf JSON with the .proto's field
   * names (include_tags, match, exclude_tags, metadata): subscribers evaluates
   * it, this service only keeps it.
   */
  tag_filter: Record<string, unknown>;
  status: CampaignStatus;
  created_at: number;
  updated_at: number;
}

export const CAMPAIGN_INDEXES: readonly IndexSpec[] = [
  // Pages of campaigns in id (creation) order.
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
];

export interface TriggerDoc {
  _id: string;
  tenant: string;
  event_type: EventType;
  template_id: string;
  description: string;
  is_active: boolean;
  delay_seconds: number;
  /** Tag name a tag event must be about ("" for any); compared ignoring case. */
  tag: string;
  created_at: number;
  updated_at: number;
}

/**
 * One firing of one trigger for one event: `_id` is `<event id>:<trigger id>`,
 * so an event redelivered (or a consumer restarted) fires each trigger once.
 * Pending until `due_at` (the trigger's delay after the event), then sent
 * through delivery with an idempotency key of its own id, then `sent`.
 */
export interface FireDoc {
  _id: string;
  tenant: string;
  trigger_id: string;
  event_id: string;
  subscriber_id: string;
  template_id: string;
  state: "pending" | "sent" | "skipped" | "failed";
  /** Why it was skipped or failed (a stable code), else "". */
  reason: string;
  email_id: string;
  due_at: number;
  /** A firing attempt holds it until then (ms); 0 when free. */
  lease_until: number;
  attempts: number;
  created_at: number;
  updated_at: number;
}

export const TRIGGER_INDEXES: readonly IndexSpec[] = [
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
  // The consumer: a tenant's active triggers on an event type.
  { name: "active_by_event", fields: { tenant: 1, event_type: 1, is_active: 1 } },
];

export const FIRE_INDEXES: readonly IndexSpec[] = [
  // The firer's sweep, across tenants: pending fires by due time.
  { name: "due", fields: { state: 1, due_at: 1 } },
  // Erasure of a subscriber's fires.
  { name: "by_subscriber", fields: { tenant: 1, subscriber_id: 1 } },
];
