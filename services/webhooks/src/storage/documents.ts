import type { Doc } from "@emailsvc/storage";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index serving a request starts with it too.

/** An endpoint of an integrator. */
export interface EndpointDoc extends Doc {
  tenant: string;
  url: string;
  /** Event types, or `["*"]`. */
  events: string[];
  description: string;
  is_active: boolean;
  /** `failing` when the platform turned it off; "" otherwise. */
  disabled_reason: string;
  disabled_at: number;
  /** The signing secret, sealed (packages/tokens `seal`, purpose `webhook-secret`): never stored or logged in clear. */
  secret_sealed: string;
  /** The secret before the last rotation, sealed, which signs beside the current one until `previous_secret_expires_at`; "" when none. */
  previous_secret_sealed: string;
  previous_secret_expires_at: number;
  /** Since when every attempt to it has failed (0: the last attempt succeeded, or none failed yet). */
  failing_since: number;
  created_at: number;
  updated_at: number;
}

/** One attempt of a delivery, as its log shows it. */
export interface AttemptRecord {
  at: number;
  /** HTTP status; 0 when there was no answer. */
  code: number;
  duration_ms: number;
  /** What went wrong, in words without personal data; "" on success. */
  error: string;
}

/**
 * One message to one endpoint. Its `_id` is the `webhook-id`, derived from
 * the event's id and the endpoint's (deliveryId), so an event delivered again
 * to the consumer inserts nothing new, and a crash neither loses nor repeats
 * a webhook-id. It is its own outbox entry: written when the event is
 * consumed, sent by the sender loop until delivered or given up.
 */
export interface DeliveryDoc extends Doc {
  tenant: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** The JSON body, as signed and sent on every attempt (ids and statuses only). */
  payload: string;
  /** The subscriber the event is about, if any: erasure deletes the deliveries that name them. */
  subscriber_id: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  next_attempt_at: number;
  /** A sender holds it until then (0: free). */
  lease_until: number;
  last_code: number;
  last_duration_ms: number;
  last_error: string;
  last_attempt_at: number;
  /** The latest attempts, newest last (at most MAX_ATTEMPT_LOG). */
  attempt_log: AttemptRecord[];
  /** Where the retry window (WEBHOOK_RETRY_FOR_SECONDS) starts: creation, or the last replay. */
  retry_from: number;
  created_at: number;
  updated_at: number;
}

export const MAX_ATTEMPT_LOG = 20;

export const ENDPOINT_INDEXES = [
  // List by id order (cursor pages); the consumer's active endpoints of a tenant.
  { name: "endpoints_by_id", fields: { tenant: 1, _id: 1 } },
  { name: "active_endpoints", fields: { tenant: 1, is_active: 1 } },
] as const;

export const DELIVERY_INDEXES = [
  // An endpoint's log, newest first (ids sort by the event's time).
  { name: "deliveries_of_endpoint", fields: { tenant: 1, endpoint_id: 1, _id: 1 } },
  // The sender: due pending deliveries of every tenant.
  { name: "due_deliveries", fields: { state: 1, next_attempt_at: 1 } },
  // The log's retention sweep: finished deliveries of every tenant by age.
  { name: "finished_deliveries", fields: { state: 1, updated_at: 1 } },
  // Erasure: a subscriber's deliveries.
  { name: "deliveries_of_subscriber", fields: { tenant: 1, subscriber_id: 1 } },
] as const;
