// The registry of topics: each topic's protobuf message (from @emailsvc/proto),
// the field its events are keyed by, and the service that produces it. Producing
// and consuming go through it, so both are typed by the message, and what every
// consumer would otherwise repeat lives here once:
//
//  - encoding: the common EventMeta (event id, tenant, time) filled from the
//    event's origin, the key taken from the message, the headers `event-id`
//    and `event-type` set in one place (`eventHeaders`);
//  - decoding: the bytes parsed as the topic's message, the meta checked (an
//    event id, an account id, mode live or test), the key field checked against
//    its id prefix and the bus key; an event that fails any of it is logged by
//    ids only and skipped (redelivering it would fail the same way forever).
//
// Events carry ids only (DESIGN.md): never an address, metadata or content.

import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { events as messages } from "@emailsvc/proto";
import type { EventBus, OutgoingEvent, ReceivedEvent, Subscription } from "./types.js";

/** A bus message: every one begins with the common EventMeta. */
type WithMeta = { meta?: messages.EventMeta | undefined };

export interface TopicSpec<S extends DescMessage> {
  schema: S;
  /** Prefix of the id the events are keyed by (`sub`, `eml`): the key is that id. */
  keyPrefix: string;
  /** The id the event is keyed by, read from the message: events of one id stay in order. */
  key(message: MessageShape<S>): string;
  /** The service that produces the topic (consumers live elsewhere). */
  producer: string;
}

function topic<S extends DescMessage>(
  schema: S & (MessageShape<S> extends WithMeta ? unknown : never),
  producer: string,
  keyPrefix: string,
  key: (message: MessageShape<S>) => string,
): TopicSpec<S> {
  return { schema, producer, keyPrefix, key };
}

/** Every topic of the platform. Adding one: its message in proto/, then one line here. */
export const TOPICS = {
  "subscriber.created": topic(messages.SubscriberCreatedSchema, "subscribers", "sub", (m) => m.subscriberId),
  "subscriber.status_changed": topic(messages.SubscriberStatusChangedSchema, "subscribers", "sub", (m) => m.subscriberId),
  "subscriber.tag_added": topic(messages.SubscriberTagAddedSchema, "subscribers", "sub", (m) => m.subscriberId),
  "subscriber.tag_removed": topic(messages.SubscriberTagRemovedSchema, "subscribers", "sub", (m) => m.subscriberId),
  "subscriber.deleted": topic(messages.SubscriberDeletedSchema, "subscribers", "sub", (m) => m.subscriberId),
  "email.send.requested": topic(messages.EmailSendRequestedSchema, "delivery", "eml", (m) => m.emailId),
  "email.status": topic(messages.EmailStatusChangedSchema, "delivery", "eml", (m) => m.emailId),
} as const;

export type Topic = keyof typeof TOPICS;
type SchemaOf<T extends Topic> = (typeof TOPICS)[T]["schema"];

/** The decoded message of a topic. */
export type EventMessage<T extends Topic> = MessageShape<SchemaOf<T>>;

/** What a producer gives for an event of a topic: the message without its meta, which the registry fills. */
export type EventBody<T extends Topic> = Omit<MessageInitShape<SchemaOf<T>>, "meta" | "$typeName">;

/** An event of any topic, with its body typed by the topic. */
export type AnyEvent = { [T in Topic]: { topic: T; body: EventBody<T> } }[Topic];

export function isTopic(name: string): name is Topic {
  return Object.prototype.hasOwnProperty.call(TOPICS, name);
}

/** The topics a service produces, for its `ensureTopics` at start. */
export function topicsProducedBy(service: string): Topic[] {
  return (Object.keys(TOPICS) as Topic[]).filter((name) => TOPICS[name].producer === service);
}

/** Where an event comes from; becomes its EventMeta and headers. */
export interface EventOrigin {
  /** `evt_…`: consumers dedupe by it, so a repeat of one event carries the same one. */
  eventId: string;
  /** `<account id>:<mode>` of the data the event is about. */
  tenant: string;
  /** When the change happened (ms). */
  occurredAt: number;
  /**
   * Headers to carry besides ours, e.g. the `traceparent` of the change that
   * made the event (W3C trace context); `event-id` and `event-type` always win.
   */
  headers?: Record<string, string> | undefined;
}

/** The headers of every event: set here, and only here. */
export function eventHeaders(topic: Topic, eventId: string, extra?: Record<string, string>): Record<string, string> {
  return { ...extra, "event-id": eventId, "event-type": topic };
}

/** One event of `topic`, encoded: meta filled from `origin`, keyed by the message's id, headers set. */
export function encodeEvent<T extends Topic>(topic: T, origin: EventOrigin, body: EventBody<T>): OutgoingEvent {
  const spec = TOPICS[topic] as unknown as TopicSpec<DescMessage>;
  const [accountId = "", mode = ""] = origin.tenant.split(":");
  const meta = create(messages.EventMetaSchema, {
    eventId: origin.eventId,
    accountId,
    mode,
    occurredAt: timestampFromMs(origin.occurredAt),
  });
  const message = create(spec.schema, { ...(body as object), meta } as MessageInitShape<DescMessage>);
  const key = spec.key(message);
  if (!isIdOf(spec.keyPrefix, key)) throw new TypeError(`${topic}: the key must be a ${spec.keyPrefix}_ id`);
  return { key, value: toBinary(spec.schema, message), headers: eventHeaders(topic, origin.eventId, origin.headers) };
}

/** `encodeEvent` for an event whose topic is known only at run time (an outbox entry's). */
export function encodeAnyEvent(event: AnyEvent, origin: EventOrigin): OutgoingEvent {
  // AnyEvent pairs each topic with its own body type; TypeScript cannot follow
  // that pairing through a union, so it is asserted here, once.
  return encodeEvent(event.topic as Topic, origin, event.body as EventBody<Topic>);
}

/** Publishes events of one topic as one batch (the bus' unit of work). */
export async function publishEvents<T extends Topic>(
  bus: EventBus,
  topic: T,
  events: ReadonlyArray<{ origin: EventOrigin; body: EventBody<T> }>,
): Promise<void> {
  if (events.length === 0) return;
  await bus.publish(
    topic,
    events.map((event) => encodeEvent(topic, event.origin, event.body)),
  );
}

/** The meta of a consumed event, checked: what a handler may rely on. */
export interface CheckedMeta {
  topic: Topic;
  eventId: string;
  accountId: string;
  mode: "live" | "test";
  /** `<account id>:<mode>`: the tenant the event is about. */
  tenant: string;
  occurredAt: number;
  /** The id the event is keyed by (checked against the message). */
  key: string;
  /** The headers as they came, e.g. `traceparent`. */
  headers: Record<string, string>;
}

export type Decoded<T extends Topic> =
  | { ok: true; message: EventMessage<T>; meta: CheckedMeta }
  | { ok: false; problem: string };

/** Parses a received event of `topic` and checks its meta and key. */
export function decodeEvent<T extends Topic>(topic: T, event: ReceivedEvent): Decoded<T> {
  const spec = TOPICS[topic] as unknown as TopicSpec<DescMessage>;
  let message: MessageShape<DescMessage> & WithMeta;
  try {
    message = fromBinary(spec.schema, event.value) as MessageShape<DescMessage> & WithMeta;
  } catch {
    return { ok: false, problem: "not a message of its topic" };
  }
  const meta = message.meta;
  if (!meta) return { ok: false, problem: "no meta" };
  if (!isIdOf("evt", meta.eventId)) return { ok: false, problem: "no valid event id" };
  if (!isIdOf("acc", meta.accountId)) return { ok: false, problem: "no valid account id" };
  if (meta.mode !== "live" && meta.mode !== "test") return { ok: false, problem: "mode is neither live nor test" };
  const key = spec.key(message);
  if (!isIdOf(spec.keyPrefix, key)) return { ok: false, problem: `no valid ${spec.keyPrefix}_ id` };
  if (key !== event.key) return { ok: false, problem: "the bus key differs from the message's id" };
  return {
    ok: true,
    message: message as unknown as EventMessage<T>,
    meta: {
      topic,
      eventId: meta.eventId,
      accountId: meta.accountId,
      mode: meta.mode,
      tenant: `${meta.accountId}:${meta.mode}`,
      occurredAt: meta.occurredAt ? timestampMs(meta.occurredAt) : 0,
      key,
      headers: event.headers,
    },
  };
}

/** Handles one checked event of a topic. Throwing has the bus deliver it again after a backoff. */
export type TopicHandler<T extends Topic> = (message: EventMessage<T>, meta: CheckedMeta) => Promise<void>;

export type TopicHandlers = { [T in Topic]?: TopicHandler<T> };

/** Where skipped events are reported: pino's `error(fields, message)` fits. */
export interface EventLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

export interface SubscribeTopicsOptions {
  /** Consumer group: the consuming service's name. */
  group: string;
  /**
   * A handler per consumed topic, all in one subscription: kafkajs' assigner
   * hands a group's partitions to its members whatever each subscribed to, so
   * two subscriptions of one group could each get the other's topic.
   */
  handlers: TopicHandlers;
  logger: EventLogger;
  fromBeginning?: boolean;
}

/**
 * Subscribes `group` to the topics of `handlers`; each event is decoded and
 * checked, then handed to its topic's handler. A malformed or undecodable
 * event is logged by ids only (topic, and event id and key when they are ids)
 * and skipped.
 */
export function subscribeTopics(bus: EventBus, options: SubscribeTopicsOptions): Promise<Subscription> {
  const topics = (Object.keys(options.handlers) as Topic[]).filter((name) => options.handlers[name] !== undefined);
  return bus.subscribe({
    group: options.group,
    topics,
    ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
    handler: async (event) => {
      if (!isTopic(event.topic) || !options.handlers[event.topic]) {
        options.logger.error({ topic: event.topic }, "event of a topic without a handler skipped");
        return;
      }
      const decoded = decodeEvent(event.topic, event);
      if (!decoded.ok) {
        const eventId = event.headers["event-id"];
        options.logger.error(
          {
            topic: event.topic,
            problem: decoded.problem,
            ...(eventId !== undefined && isIdOf("evt", eventId) ? { event_id: eventId } : {}),
            ...(looksLikeId(event.key) ? { key: event.key } : {}),
          },
          "malformed event skipped",
        );
        return;
      }
      const handler = options.handlers[event.topic] as TopicHandler<Topic>;
      await handler(decoded.message, decoded.meta);
    },
  });
}

// Ids are `<prefix>_` and 26 characters of Crockford base32 (@emailsvc/runtime
// makes them); the bus checks their shape only.
const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

function isIdOf(prefix: string, value: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}

function looksLikeId(value: string): boolean {
  return /^[a-z]{2,5}_[0-9a-hjkmnp-tv-z]{26}$/.test(value);
}
