import { events, SubscriberStatus } from "@emailsvc/proto";
import { type Logger } from "@emailsvc/telemetry";
import { tenantOfKey, type CallContext } from "@emailsvc/tenancy";
import type { EventType } from "../domain/trigger.js";
import type { FireDoc } from "../storage/documents.js";
import type { FiringServices } from "./ports.js";

// Firing triggers: an event records one fire per matching active trigger
// (exactly once per event and trigger, by the fire's id: record-fires.ts), and
// the firer sends each fire when it is due, through delivery, with the fire's
// id as the idempotency key, so a fire sent twice (a crash after the send,
// before the write) is one email (fire-due.ts).

export interface FiringDeps {
  firing: FiringServices;
  logger: Logger;
  now: () => number;
}

/** A subscriber event, as the consumer read it (ids only). */
export interface SubscriberEvent {
  tenant: string;
  eventId: string;
  type: EventType;
  subscriberId: string;
  /** For tag events. */
  tagId?: string;
  /** For subscriber.created: the status it was created with (unspecified when the event did not say). */
  status?: SubscriberStatus;
  /** For subscriber.created by a bulk import: the job, and whether the import asked for its triggers. */
  importId?: string;
  importRunsTriggers?: boolean;
  /** For subscriber.tag_removed: what took the tag (unspecified: that tag alone was left). */
  cause?: events.TagRemovalCause;
  occurredAt: number;
}

/**
 * Why an event's fires are recorded skipped, if they are:
 *  - `subscriber.created` is someone joining, which a subscriber created other
 *    than active is not (an import of an opt-out, the record a one-click
 *    unsubscribe of a non-subscriber keeps), so nobody is welcomed right
 *    after unsubscribing (`created_not_active`); nor are a bulk import's
 *    rows (people moved over, not joining) unless the import asked for its
 *    triggers (`run_triggers`): `imported`;
 *  - `subscriber.tag_removed` caused by unsubscribing from everything is the
 *    person asking for no more mail, not leaving one list: no "you left a
 *    list" mail, whatever the template's category (`unsubscribed_all`).
 */
export function skipReasonOf(event: SubscriberEvent): string | undefined {
  const joined = event.status === undefined || event.status === SubscriberStatus.UNSPECIFIED || event.status === SubscriberStatus.ACTIVE;
  if (event.type === "subscriber.created" && !joined) return "created_not_active";
  if (event.type === "subscriber.created" && event.importId && !event.importRunsTriggers) return "imported";
  if (event.type === "subscriber.tag_removed" && event.cause === events.TagRemovalCause.UNSUBSCRIBE_ALL) return "unsubscribed_all";
  return undefined;
}

/** The context a fire acts in: its tenant, as the trigger (for audit and logs). */
export function fireCall(fire: Pick<FireDoc, "tenant" | "trigger_id" | "_id">): CallContext {
  return { tenant: tenantOfKey(fire.tenant), actor: `trigger:${fire.trigger_id}`, requestId: fire._id };
}
