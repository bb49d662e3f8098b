import { TRIGGER_EVENT_TYPE_NAMES, TRIGGER_EVENT_TYPES, TRIGGER_EVENT_TYPES_WITH_TAG, type TriggerEventType } from "@emailsvc/proto";
import { invalid } from "@emailsvc/errors";

// What a trigger is: the events it can fire on (the one list is
// proto/trigger-event-types.ts), and the rules of its fields.

export interface EventTypeInfo {
  name: TriggerEventType;
  description: string;
  /** Whether a trigger on it may name a tag (the event is about one). */
  takesTag: boolean;
}

/** The events a trigger can fire on (served at GET /api/v1/event-types), in the list's order. */
export const EVENT_TYPES: readonly EventTypeInfo[] = TRIGGER_EVENT_TYPE_NAMES.map((name) => ({
  name,
  description: TRIGGER_EVENT_TYPES[name].description,
  takesTag: TRIGGER_EVENT_TYPES[name].takesTag,
}));

export type EventType = TriggerEventType;

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
  return known.name;
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
    throw invalid(`${eventType} is about no tag`, [{ field: "tag", description: `is only for ${TRIGGER_EVENT_TYPES_WITH_TAG.join(" and ")}` }]);
  }
  return tag;
}
