// The events a trigger can fire on: the one list. Everything else derives
// from it: the campaigns service's validation, its ListEventTypes answer
// (GET /api/v1/event-types) and the firing of triggers; the gateway's JSON
// schemas and OpenAPI document (the `event_type` enum, which types take a tag).
// Adding one: ARCHITECTURE.md, "Adding an event type".

/** Every trigger event type's name, as `Trigger.event_type` carries it. */
export const TRIGGER_EVENT_TYPE_NAMES = ["subscriber.created", "subscriber.tag_added", "subscriber.tag_removed", "subscriber.unsubscribed"] as const;

export type TriggerEventType = (typeof TRIGGER_EVENT_TYPE_NAMES)[number];

export interface TriggerEventTypeInfo {
  /** Shown to integrators (GET /api/v1/event-types). */
  description: string;
  /** Whether a trigger on it may name a tag (the event is about one). */
  takesTag: boolean;
  /** The subscribers service's topic the event comes from (ids only; see proto/emailsvc/events). */
  topic: "subscriber.created" | "subscriber.tag_added" | "subscriber.tag_removed" | "subscriber.status_changed";
}

/** What each type means; a name without its entry does not compile. */
export const TRIGGER_EVENT_TYPES: { readonly [T in TriggerEventType]: TriggerEventTypeInfo } = {
  "subscriber.created": { description: "A subscriber was created (by the API or an import).", takesTag: false, topic: "subscriber.created" },
  "subscriber.tag_added": { description: "A subscriber got a tag; optionally only the tag named.", takesTag: true, topic: "subscriber.tag_added" },
  "subscriber.tag_removed": { description: "A subscriber lost a tag; optionally only the tag named.", takesTag: true, topic: "subscriber.tag_removed" },
  "subscriber.unsubscribed": {
    description: "A subscriber's status became unsubscribed (one-click link, portal or API).",
    takesTag: false,
    topic: "subscriber.status_changed",
  },
};

/** The types whose triggers may name a tag, and those whose may not. */
export const TRIGGER_EVENT_TYPES_WITH_TAG = TRIGGER_EVENT_TYPE_NAMES.filter((name) => TRIGGER_EVENT_TYPES[name].takesTag);
export const TRIGGER_EVENT_TYPES_WITHOUT_TAG = TRIGGER_EVENT_TYPE_NAMES.filter((name) => !TRIGGER_EVENT_TYPES[name].takesTag);
