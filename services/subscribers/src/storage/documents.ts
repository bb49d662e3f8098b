import type { OutboxDoc, OutboxEntry as KitOutboxEntry } from "@emailsvc/outbox";
import type { ProducedTopic } from "@emailsvc/manifest";
import type { Doc } from "@emailsvc/storage";
import type { AuditSource } from "../domain/audit.js";
import type { SuppressionReason } from "../domain/suppression.js";
import type { Locale, Metadata, Status } from "../domain/subscriber.js";
import type { ImportColumns, ImportCounts, ImportFormat, ImportMode, ImportState } from "../domain/import.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index starts with it too, so no query can reach across tenants.

/** Topics the subscribers service produces. */
export type SubscriberTopic = ProducedTopic<"subscribers">;

/**
 * A pending side effect of a change, kept inside the changed document (the
 * outbox of @emailsvc/outbox). `id` is the event id: the audit record's `_id`
 * and the bus event's event_id.
 */
export interface OutboxEntry extends KitOutboxEntry {
  type: string;
  actor: string;
  /** How the change came, and the request's IP address and user agent (see domain/audit.ts); absent in older entries. */
  source?: AuditSource | "";
  ip?: string;
  user_agent?: string;
  /** Audit-trail data (ids and tag names; never the address or metadata). */
  audit: Record<string, unknown> | null;
  /**
   * Bus event, by ids only; null when the change is not published. `to`: the
   * status a status change moves to, or a subscriber is created with;
   * `cause`: on a tag left by unsubscribing from everything, that cause
   * (the event's TagRemovalCause; absent otherwise).
   */
  /**
   * A double opt-in confirmation mail to hand to delivery (the relay's
   * effect, usecases/ports.ts): the account's template slug, "" for the
   * platform's own. Absent on other entries.
   */
  mail?: { template: string };
  bus: {
    topic: SubscriberTopic;
    tag_id?: string;
    tag_ids?: string[];
    from?: string;
    to?: string;
    cause?: "unsubscribe_all";
    /** On subscriber.created by an import: the job, and whether its triggers are to fire. */
    import_id?: string;
    run_triggers?: boolean;
  } | null;
}

export interface SubscriberDoc extends OutboxDoc<OutboxEntry> {
  tenant: string;
  email: string;
  /** Lower-cased address: unique per tenant, used for lookup (no collation on FerretDB). */
  email_key: string;
  status: Status;
  /** The subscriber's language ("" or absent: not set). */
  locale?: Locale;
  metadata: Metadata;
  tag_ids: string[];
  /**
   * When a bounced or complained subscriber unsubscribed from everything
   * (usecases/unsubscribe-all.ts): their status stays, and this keeps their
   * choice until the status becomes unsubscribed (a change to active leads
   * there too, usecases/update-subscriber.ts) or the person joins a list on
   * the portal (usecases/subscriber-tags.ts). Absent or null otherwise.
   */
  opted_out_at?: number | null;
  /**
   * A `pending` subscriber (double opt-in) not confirmed by then is erased by
   * the expiry sweep (usecases/expire-pending.ts); absent or null otherwise.
   */
  confirm_by?: number | null;
  /** A pending subscriber's last confirmation mail (its outbox entry's time): a signup again resends it at most hourly. */
  confirmation_mailed_at?: number | null;
  created_at: number;
  /**
   * A deleted subscriber is first wiped to a tombstone holding ids only, so the
   * subscriber.deleted event can leave through the outbox; the relay then
   * removes the tombstone.
   */
  deleted: boolean;
  /** On a tombstone: the privacy request log's record of this erasure, marked done when the tombstone goes. */
  erasure_request?: string;
  /** The import row that last changed it (`<job>:<row>`): a row re-applied after a crash changes nothing twice. */
  last_import?: string;
}

export interface TagDoc extends Doc {
  tenant: string;
  name: string;
  /** Lower-cased name: unique per tenant. */
  name_key: string;
  description: string;
  is_public: boolean;
  /** Name and description by locale (en, de, fr, it); absent on tags stored before translations. */
  translations?: Record<string, { name: string; description: string }>;
  created_at: number;
  updated_at: number;
}

export interface AuditDoc extends Doc {
  tenant: string;
  subscriber_id: string;
  type: string;
  occurred_at: number;
  actor: string;
  /** How the change came (api, portal, one_click, import; "" when not said); absent in older records. */
  source?: AuditSource | "";
  /** The request's IP address and user agent: personal data, erased with the trail. */
  ip?: string;
  user_agent?: string;
  data: Record<string, unknown>;
}

/**
 * An entry of the account's suppression list (domain/suppression.ts): `_id`
 * is the keyed hash of the tenant and the address (so unique across tenants,
 * and found by address without storing it lower-cased twice). An entry for
 * a bounce, a complaint, an unsubscribe or added by hand keeps the address;
 * an erased person's keeps nothing but the hash and the reason (entries
 * written before the list had reasons are erasure markers).
 */
export interface SuppressionDoc extends Doc {
  tenant: string;
  /** Which key of SUPPRESSION_KEYS made the hash. */
  key_id: string;
  created_at: number;
  /** The address as it was given or mailed; absent once its owner was erased. */
  email?: string;
  /** Absent on erasure markers written before reasons existed: `erased`. */
  reason?: SuppressionReason;
  /** `api`, `delivery`, `erasure`. */
  source?: string;
  /** The email whose bounce or complaint added it. */
  email_id?: string;
}

/**
 * A soft bounce (a deferred email that gave up) of an address, by the
 * address's keyed hash: enough of them within the window suppress it.
 * `_id` is the email id, so a repeated report counts once.
 */
export interface SoftBounceDoc extends Doc {
  tenant: string;
  /** The address's keyed hash under the current key. */
  marker: string;
  at: number;
}

export const SOFT_BOUNCE_INDEXES = [
  // Counting an address's soft bounces within the window, and dropping older ones.
  { name: "by_marker", fields: { tenant: 1, marker: 1, at: 1 } },
] as const;

/** What a privacy request asked for. */
export type PrivacyRequestKind = "export" | "erasure";

/**
 * The log of export and erasure requests, so that an operator can show they
 * handled them: who asked (`api_key:<key id>`, `subscriber` through the
 * portal, or the caller's actor), when, how (the AuditContext's source) and
 * what came of it. Never the address, the subscriber's id, an IP address or
 * a user agent: the log outlives the subscriber.
 */
export interface PrivacyRequestDoc extends Doc {
  tenant: string;
  kind: PrivacyRequestKind;
  requested_by: string;
  /** api, portal, … ("" when the caller did not say). */
  source: string;
  requested_at: number;
  /**
   * export: `exported` | `not_found` | `too_large`; erasure: `erasing` (the
   * subscriber is wiped, its tombstone not yet gone) → `erased`, or `not_found`.
   */
  outcome: string;
  /** When the request was done (export answered, erasure's tombstone gone); null while it runs. */
  completed_at: number | null;
}

export const PRIVACY_REQUEST_INDEXES = [
  // A tenant's requests in id (time) order.
  { name: "by_tenant", fields: { tenant: 1, _id: 1 } },
] as const;

export const SUPPRESSION_INDEXES = [
  // A create looks its address up by hash (_id) within its tenant.
  { name: "by_tenant", fields: { tenant: 1, _id: 1 } },
] as const;

export const SUBSCRIBER_INDEXES = [
  // Create and lookup by email; uniqueness per tenant, case-insensitive.
  { name: "email_per_tenant", fields: { tenant: 1, email_key: 1 }, unique: true },
  // List subscribers by id order (cursor pages), with and without a status filter.
  { name: "list_by_id", fields: { tenant: 1, deleted: 1, _id: 1 } },
  { name: "list_by_status", fields: { tenant: 1, deleted: 1, status: 1, _id: 1 } },
  // Tag deletion removes the tag from every member.
  { name: "members_of_tag", fields: { tenant: 1, tag_ids: 1 }, arrayField: "tag_ids" },
  // Audiences (AudienceService): active subscribers holding a tag ($in, $all),
  // in id order after a resume point. An audience without include tags walks
  // list_by_status instead.
  { name: "audience_by_tag", fields: { tenant: 1, status: 1, tag_ids: 1, _id: 1 }, arrayField: "tag_ids" },
  // The expiry sweep: pending subscribers (double opt-in) past their
  // confirm_by, of every tenant (usecases/expire-pending.ts).
  { name: "pending_by_deadline", fields: { status: 1, confirm_by: 1 } },
  // The outbox relay's sweep for changes whose side effects are not done yet
  // (by this name since before @emailsvc/outbox's OUTBOX_INDEX, which adds
  // updated_at; pending documents are few, so either serves).
  { name: "outbox_pending", fields: { outbox_pending: 1 } },
] as const;

/**
 * An account's double opt-in settings (domain/double-opt-in.ts), one per
 * tenant: `_id` is the tenant key. Absent: the defaults.
 */
export interface AudienceSettingsDoc extends Doc {
  tenant: string;
  double_opt_in: boolean;
  double_opt_in_for_api: boolean;
  confirmation_expiry_seconds: number;
  confirmation_template: string;
  updated_at: number;
}

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

/**
 * A bulk import job (usecases/run-import.ts). Its counts and `row` are the
 * checkpoint: written after each batch, together, so a restart resumes after
 * the last batch written, and the batch re-applied then writes nothing twice
 * (subscriber ids derived from the job and the row, updates guarded by
 * `last_import`).
 */
export interface ImportJobDoc extends Doc {
  tenant: string;
  state: ImportState;
  format: ImportFormat;
  mode: ImportMode;
  columns: ImportColumns;
  delimiter: string;
  resubscribe: boolean;
  resubscribe_reason: string;
  run_triggers: boolean;
  /** Who uploaded it, as the audit trail of every row it changes says (source `import`). */
  actor: string;
  ip: string;
  user_agent: string;
  /** Chunks stored (0 .. chunk_count-1) and their bytes. */
  chunk_count: number;
  size_bytes: number;
  /**
   * The upload is still stored: true from creation until its chunks are
   * dropped after the job is over. The job's end and the drop are two writes,
   * so a crash between them leaves this true for the worker's sweep to finish
   * (an upload holds personal data: none is kept past its job).
   */
  upload_held?: boolean;
  /** The last data row done (checkpoint); 0: none. */
  row: number;
  counts: ImportCounts;
  /** A stable code when failed (`upload_aborted`, `missing_columns`, `too_many_rows`, …); "" otherwise. */
  failure: string;
  /** The worker holding the job, until when (a lease renewed after each batch). */
  lease_owner: string;
  lease_until: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export const IMPORT_JOB_INDEXES = [
  // A tenant's jobs in id (time) order.
  { name: "by_tenant", fields: { tenant: 1, _id: 1 } },
  // The worker's claim: queued or running jobs whose lease ran out; the reaper's stale uploads.
  { name: "claimable", fields: { state: 1, lease_until: 1 } },
  // The sweep of uploads kept past their job's end (a crash between the two).
  { name: "upload_held", fields: { upload_held: 1, state: 1 } },
] as const;

/** A chunk of an upload kept in the database (MongoDB); the embedded store keeps them as files. `_id` = `<job>:<seq>`. */
export interface ImportChunkDoc extends Doc {
  tenant: string;
  job_id: string;
  seq: number;
  /** Base64: both stores keep a string as it is. */
  data: string;
}

export const IMPORT_CHUNK_INDEXES = [
  // A job's chunks, read in order and deleted together.
  { name: "by_job", fields: { tenant: 1, job_id: 1, seq: 1 } },
] as const;

/** A row of a job's report: `_id` = `<job>:<row, 10 digits>`, so one per row and in row order. */
export interface ImportErrorDoc extends Doc {
  tenant: string;
  job_id: string;
  row: number;
  field: string;
  code: string;
  detail: string;
}

export const IMPORT_ERROR_INDEXES = [
  // A job's report in row order (the _id sorts by row within a job).
  { name: "by_job", fields: { tenant: 1, job_id: 1, _id: 1 } },
] as const;
