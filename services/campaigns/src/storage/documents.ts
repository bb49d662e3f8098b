import { OUTBOX_INDEX, type OutboxDoc, type OutboxEntry } from "@emailsvc/outbox";
import type { IndexSpec } from "@emailsvc/storage";
import type { CampaignStatus, RecipientCounts, RecipientState, SkipReason } from "../domain/campaign.js";
import type { EventType } from "../domain/trigger.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index starts with it too, so no query can reach across tenants.

/** A campaign's change to publish on campaign.status_changed (the outbox of @emailsvc/outbox). */
export interface CampaignOutboxEntry extends OutboxEntry {
  status: CampaignStatus;
}

export interface CampaignDoc extends OutboxDoc<CampaignOutboxEntry> {
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
  // The fields below are set when a draft is sent (drafts stored before they existed lack them).
  /** When a scheduled campaign starts (ms); null when sent at once. */
  send_at?: number | null;
  started_at?: number | null;
  finished_at?: number | null;
  /** Why the campaign failed (`schedule_missed`, `template_not_found`), else "". */
  failure_reason?: string;
  /** Pinned when sending starts: every recipient gets this version. */
  template_version?: number;
  /** Where the recipients stand; moved by `$inc` from one bucket to another (see RecipientCounts). */
  counts?: RecipientCounts;
  /** The audience snapshot: complete, or the last subscriber id copied into the ledger (to resume after a crash). */
  snapshot_complete?: boolean;
  snapshot_after?: string;
  /**
   * The hand-over: the id of the last ledger row handed to delivery ("" or
   * absent before the first). Rows stored `pending` at or before it are with
   * delivery (counted queued); after it, still to be handed over.
   */
  handed_up_to?: string;
  /** Which dispatcher works on the campaign, until when (ms): renewed while it works; a crashed one's runs out. */
  lease_owner?: string;
  lease_until?: number;
  /**
   * Recipients whose ledger rows an erasure removed (their subscribers were
   * erased), by the bucket the row was in (always a final one: sent, failed,
   * skipped.<reason>): the counts keep them, anonymously, the ledger does not
   * (usecases/ledger.ts, eraseRows).
   */
  erased_rows?: { sent?: number; failed?: number; skipped?: Partial<Record<SkipReason, number>> };
  /** Email ids of rows an erasure has counted in `erased_rows` and not yet removed (a crash in between is finished by the next pass). */
  erasing?: string[];
}

export const CAMPAIGN_INDEXES: readonly IndexSpec[] = [
  // Pages of campaigns in id (creation) order.
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
  // The dispatcher, across tenants: campaigns sending or scheduled.
  { name: "by_status", fields: { status: 1 } },
  // ListCampaigns with statuses (the dashboard's running campaigns), in id order.
  { name: "list_by_status", fields: { tenant: 1, status: 1, _id: 1 } },
  // ListTemplateUsers: the tenant's campaigns of a template (before the template is deleted).
  { name: "by_template", fields: { tenant: 1, template_id: 1 } },
  OUTBOX_INDEX,
];

/**
 * One recipient of one campaign: the ledger. `_id` is
 * `<campaign id>:<subscriber id>`, so the snapshot can be taken again after a
 * crash without a second row, and the rows of a campaign lie together in id
 * order. Stored `pending` from the snapshot until its outcome: handed to
 * delivery is a position on the campaign (`handed_up_to`), not a write here;
 * then sent | failed, or skipped with a reason, in one write guarded by the
 * state it leaves. `held`: delivery held it for a pause, to be handed over
 * again. `queued` is what earlier versions stored for a row with delivery.
 */
export interface RecipientDoc {
  _id: string;
  tenant: string;
  campaign_id: string;
  subscriber_id: string;
  /** Minted when the row is made and never changed: a recipient handed over twice is one email. */
  email_id: string;
  state: RecipientState | "held";
  /** skipped: why; failed: delivery's code; absent (or "") otherwise. */
  reason?: SkipReason | string;
  /** When it was copied or last moved (ms). */
  updated_at: number;
}

export const RECIPIENT_INDEXES: readonly IndexSpec[] = [
  // A campaign's rows of a state in id order (the dispatcher's walk, cancel, recounts). With `_id` last each
  // key is one row: the embedded store keeps the rows of an index key in one array, and a key shared by a
  // whole campaign made every move of a row cost the length of that array.
  { name: "by_campaign_state", fields: { tenant: 1, campaign_id: 1, state: 1, _id: 1 } },
  // An unsubscribe or erasure skips the subscriber's rows.
  { name: "by_subscriber", fields: { tenant: 1, subscriber_id: 1 } },
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
  /** Why the platform turned it off (`template_deleted`); absent or "" when it did not. */
  disabled_reason?: string;
  /** The last fire that could not be sent: its stable reason and when (ms); absent when none failed. */
  last_failure_reason?: string;
  last_failure_at?: number;
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
  /** The trigger's event type when the fire was recorded (for the subscriber's export); absent in older fires. */
  event_type?: EventType;
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
  // ListTemplateUsers: the tenant's triggers of a template (before the template is deleted).
  { name: "by_template", fields: { tenant: 1, template_id: 1 } },
];

export const FIRE_INDEXES: readonly IndexSpec[] = [
  // The firer's sweep, across tenants: pending fires by due time.
  { name: "due", fields: { state: 1, due_at: 1 } },
  // A tenant's pending fires due before a time: deferred together when delivery's test-mode quota is used up.
  { name: "due_by_tenant", fields: { tenant: 1, state: 1, due_at: 1 } },
  // Erasure of a subscriber's fires.
  { name: "by_subscriber", fields: { tenant: 1, subscriber_id: 1 } },
];
