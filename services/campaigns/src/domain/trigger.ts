import { invalid } from "@emailsvc/runtime";

// What a trigger is: the events it can fire on, and the rules of its fields.

export interface EventTypeInfo {
  name: string;
  description: string;
  /** Whether a trigger on it may name a tag (the event is about one). */
  takesTag: boolean;
}

/** The events a trigger can fire on (served at GET /api/v1/event-types). */
export const EVENT_TYPES: readonly EventTypeInfo[] = [
  { name: "subscriber.created", description: "A subscriber was created (by the API or an import).", takesTag: false },
  { name: "subscriber.tag_added", description: "A subscriber got a tag; optionally only the tag named.", takesTag: true },
  { name: "subscriber.tag_removed", description: "A subscriber lost a tag; optionally only the tag named.", takesTag: true },
  { name: "subscriber.unsubscribed", description: "A subscriber's status became unsubscribed (one-click link, portal or API).", takesTag: false },
];

export type EventType = "subscriber.created" | "subscriber.tag_added" | "subscriber.tag_removed" | "subscriber.unsubscribed";

export interface TriggerView {
  id: string;
  eventType: EventType;
  templateId: string;
  description: string;
  isActive: boolean;
  delaySeconds: number;
  /** The tag a tag event must be about ("" for any). */
  tag: string;
  createdAt: number;
  updatedAt: number;
  /** Why the platform turned it off ("" when it did not). */
  disabledReason: string;
  /** The last fire that could not be sent: why ("" when none failed) and when. */
  lastFailureReason: string;
  lastFailureAt: number | null;
}

/** Why the platform turns a trigger off: its template is gone, so every fire would fail. */
export const TEMPLATE_DELETED = "template_deleted";

export const MAX_DELAY_SECONDS = 30 * 24 * 3600;
const DESCRIPTION_MAX = 500;

export function validateEventType(value: string): EventType {
  const known = EVENT_TYPES.find((type) => type.name === value);
  if (!known) {
    throw invalid(`event_type must be one of ${EVENT_TYPES.map((t) => t.name).join(", ")}`, [
      { field: "event_type", description: `is not one of ${EVENT_TYPES.map((t) => t.name).join(", ")}` },
    ]);
  }
  return known.name as EventType;
}

export function validateDescription(value: string): string {
  if ([...value].length > DESCRIPTION_MAX) {
    throw invalid(`description is longer than ${DESCRIPTION_MAX} characters`, [{ field: "description", description: `is longer than ${DESCRIPTION_MAX} characters` }]);
  }
  return value;
}

export function validateDelay(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > MAX_DELAY_SECONDS) {
    throw invalid(`delay_seconds must be 0 to ${MAX_DELAY_SECONDS}`, [{ field: "delay_seconds", description: `must be 0-${MAX_DELAY_SECONDS}` }]);
  }
  return value;
}

/** A tag condition is for tag events only. */
export function validateTagFor(eventType: EventType, tag: string): string {
  if (tag !== "" && !EVENT_TYPES.find((t) => t.name === eventType)!.takesTag) {
    throw invalid(`${eventType} is about no tag`, [{ field: "tag", description: `is only for subscriber.tag_added and subscriber.tag_removed` }]);
  }
  return tag;
}
