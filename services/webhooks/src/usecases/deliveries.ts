import { createHash } from "node:crypto";
import type { DeliveryDoc } from "../storage/documents.js";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/**
 * The `webhook-id` of an event's message to an endpoint: `msg_`, the event
 * id's time part (so an endpoint's log sorts by the event's time), and 16
 * characters of a hash of both ids. The same event and endpoint always give
 * the same id, so the consumer's insert of a redelivered event is a no-op.
 */
export function deliveryId(eventId: string, endpointId: string): string {
  const time = /^[a-z]+_([0-9a-hjkmnp-tv-z]{10})/.exec(eventId)?.[1] ?? "0000000000";
  const hash = createHash("sha256").update(`${eventId}\n${endpointId}`).digest();
  let tail = "";
  for (let i = 0; i < 16; i++) tail += ALPHABET[hash[i]! % 32];
  return `msg_${time}${tail}`;
}

/** A delivery as the log shows it. */
export interface DeliveryView {
  id: string;
  eventType: string;
  state: DeliveryDoc["state"];
  attempts: number;
  lastCode: number;
  lastDurationMs: number;
  lastError: string;
  lastAttemptAt: number;
  /** 0 when none is scheduled (delivered or failed). */
  nextAttemptAt: number;
  createdAt: number;
  attemptLog: DeliveryDoc["attempt_log"];
}

export function deliveryView(doc: DeliveryDoc): DeliveryView {
  return {
    id: doc._id,
    eventType: doc.event_type,
    state: doc.state,
    attempts: doc.attempts,
    lastCode: doc.last_code,
    lastDurationMs: doc.last_duration_ms,
    lastError: doc.last_error,
    lastAttemptAt: doc.last_attempt_at,
    nextAttemptAt: doc.state === "pending" ? doc.next_attempt_at : 0,
    createdAt: doc.created_at,
    attemptLog: doc.attempt_log,
  };
}
