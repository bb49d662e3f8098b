// The registry of topics: every topic of the platform with its protobuf
// message (from @emailsvc/proto) and the id it is keyed by. Producing and
// consuming go through it, so both are typed by the topic, events are encoded
// and their headers set in one place, and the decode-and-check every consumer
// needs (a message that does not decode, or whose meta or key id is not
// well formed, is logged by ids and skipped) is written once.
//
//   await publishEvents(bus, [encodeEvent("email.status", { eventId, tenant, occurredAt }, { emailId, status: "sent" })]);
//   await subscribeEvents(bus, { group: "delivery", logger, handlers: {
//     "email.send.requested": async (message, meta) => { ... message.emailId, meta.tenant ... },
//   } });

import { create, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { events } from "@emailsvc/proto";
import { isId } from "@emailsvc/ids";
import {
  context,
  counter,
  extractTraceContext,
  histogram,
  observedGauge,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingEnabled,
  TRACEPARENT,
} from "@emailsvc/telemetry";
import { type KeyMode } from "@emailsvc/tenancy";
import { messageCodec } from "./codec/index.js";
import type { EventBus, OutgoingEvent, ReceivedEvent, Subscription } from "./types.js";

/** One topic: its message and the id events are keyed by (order holds per key). */
export interface TopicSpec<S extends DescMessage = DescMessage> {
  schema: S;
  /** Prefix of the key id (`sub`, `eml`), or of this message's key: the key must be such an id. */
  keyKind: string | ((message: MessageShape<S>) => string);
  /** The key of an event: an id field of its message. */
  key(message: MessageShape<S>): string;
}

function topic<S extends DescMessage>(
  schema: S,
  keyKind: string | ((message: MessageShape<S>) => string),
  key: (message: MessageShape<S>) => string,
): TopicSpec<S> {
  return { schema, keyKind, key };
}

/** Every topic of the platform. Events carry ids only, never personal data (see proto/emailsvc/events). */
export const TOPICS = {
  "subscriber.created": topic(events.SubscriberCreatedSchema, "sub", (m) => m.subscriberId),
  "subscriber.status_changed": topic(events.SubscriberStatusChangedSchema, "sub", (m) => m.subscriberId),
  "subscriber.tag_added": topic(events.SubscriberTagAddedSchema, "sub", (m) => m.subscriberId),
  "subscriber.tag_removed": topic(events.SubscriberTagRemovedSchema, "sub", (m) => m.subscriberId),
  "subscriber.deleted": topic(events.SubscriberDeletedSchema, "sub", (m) => m.subscriberId),
  // A campaign's batch of recipients is keyed by its first email id (batches spread over the partitions), an
  // email delivery stored by its id, a campaign's lone recipient (the form before batches) by subscriber.
  "email.send.requested": topic(
    events.EmailSendRequestedSchema,
    (m) => (m.recipients.length > 0 || !m.campaignId ? "eml" : "sub"),
    (m) => (m.recipients.length > 0 ? m.recipients[0]!.emailId : m.campaignId ? m.subscriberId : m.emailId),
  ),
  // A batch of a campaign's outcomes is keyed by its first email id (batches spread over the partitions),
  // an email's own status by its id.
  "email.status": topic(events.EmailStatusChangedSchema, "eml", (m) => (m.outcomes.length > 0 ? m.outcomes[0]!.emailId : m.emailId)),
  "campaign.status_changed": topic(events.CampaignStatusChangedSchema, "cmp", (m) => m.campaignId),
} as const;

export type Topic = keyof typeof TOPICS;
type SchemaOf<T extends Topic> = (typeof TOPICS)[T]["schema"];
/** The decoded message of a topic. */
export type EventMessage<T extends Topic> = MessageShape<SchemaOf<T>>;
/** What a producer gives for an event of a topic: its fields but `meta`, which encodeEvent fills. */
export type EventBody<T extends Topic> = Omit<MessageInitShape<SchemaOf<T>>, "meta" | "$typeName">;

export function isTopic(name: string): name is Topic {
  return Object.prototype.hasOwnProperty.call(TOPICS, name);
}

/** One email's outcome on `email.status`: a batch's item, or the one-email form's own fields. */
export type EmailOutcome = Omit<MessageShape<typeof events.EmailOutcomeSchema>, "$typeName">;

/**
 * The outcomes an `email.status` event carries: each of a batch's, or the
 * one-email form's (the message itself, whose fields are an outcome's, with
 * `afterMs` 0). Consumers read both forms through this, so that events of a
 * delivery from before batches still count (proto/emailsvc/events, email_events.proto).
 */
export function emailOutcomesOf(message: EventMessage<"email.status">): readonly EmailOutcome[] {
  return message.outcomes.length > 0 ? message.outcomes : [oneEmailOutcome(message)];
}

function oneEmailOutcome(message: EventMessage<"email.status">): EmailOutcome {
  const { emailId, status, subscriberId, campaignId, reason, failureReason, bounceType } = message;
  return { emailId, status, subscriberId, campaignId, reason, failureReason, bounceType, afterMs: 0 };
}

/**
 * The id of one email's outcome on `email.status`, for a consumer that tells
 * outcomes apart by id (webhooks' deduplication): the event id of the
 * one-email form; of a batch's item, the batch's event id and the email id,
 * so that a redelivered batch gives each outcome the same id again. Starts
 * with the event id, so its time part (`evt_<time>`) is the event's.
 */
export function emailOutcomeId(message: EventMessage<"email.status">, eventId: string, outcome: EmailOutcome): string {
  return message.outcomes.length > 0 ? `${eventId}/${outcome.emailId}` : eventId;
}

/** The meta of an event a producer writes. */
export interface EventOrigin {
  /** Unique per event (`evt_…`): consumers deduplicate by it. */
  eventId: string;
  /** The tenant key `<account id>:<mode>` the event belongs to. */
  tenant: string;
  /** When the change happened (ms). */
  occurredAt: number;
  /**
   * W3C `traceparent` of the request or event that made the change (kept in
   * the outbox entry while tracing is on): the consumer's span continues it.
   */
  trace?: string | undefined;
}

/** An event ready for the bus: its topic and the encoded record (key, value, headers). */
export interface EncodedEvent {
  topic: Topic;
  event: OutgoingEvent;
}

/**
 * The headers of every event, set here only. `event-id` and `event-type` let
 * a reader (or a dead-letter tool) tell events apart without decoding them;
 * W3C `traceparent` joins the consumer's handling to the trace of the change
 * that caused it. Ids only, never personal data.
 */
export function eventHeaders(topic: Topic, eventId: string, trace?: string): Record<string, string> {
  const headers: Record<string, string> = { "event-id": eventId, "event-type": topic };
  if (trace && TRACEPARENT_FORM.test(trace)) headers[TRACEPARENT] = trace;
  return headers;
}

/** The event with the `traceparent` of the change that caused it (the outbox keeps it per entry). */
export function withTraceparent(encoded: EncodedEvent, traceparent: string | undefined): EncodedEvent {
  if (!traceparent || !TRACEPARENT_FORM.test(traceparent)) return encoded;
  return { topic: encoded.topic, event: { ...encoded.event, headers: { ...encoded.event.headers, [TRACEPARENT]: traceparent } } };
}

/** A W3C traceparent (version 00), as the propagator writes it. */
const TRACEPARENT_FORM = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Encodes one event of `topic`: the message with its meta, keyed by the topic's key id. */
export function encodeEvent<T extends Topic>(topic: T, origin: EventOrigin, body: EventBody<T>): EncodedEvent {
  if (!isTopic(topic)) throw new TypeError(`unknown topic ${String(topic)}`);
  const spec = TOPICS[topic] as unknown as TopicSpec;
  const separator = origin.tenant.indexOf(":");
  // The meta as create() would make it, written out: every field is given, and create() walking the
  // descriptor for it and its Timestamp was most of encodeEvent's cost besides the encoding itself.
  const seconds = Math.floor(origin.occurredAt / 1000);
  const meta: MessageShape<typeof events.EventMetaSchema> = {
    $typeName: "emailsvc.events.v1.EventMeta",
    eventId: origin.eventId,
    accountId: origin.tenant.slice(0, separator),
    mode: origin.tenant.slice(separator + 1),
    // timestampFromMs's arithmetic.
    occurredAt: { $typeName: "google.protobuf.Timestamp", seconds: BigInt(seconds), nanos: (origin.occurredAt - seconds * 1000) * 1_000_000 },
  };
  // The body's fields, then the meta: no spread of the body into a new init object per event.
  const message = create(spec.schema, body as MessageInitShape<DescMessage>);
  (message as { meta?: unknown }).meta = meta;
  const key = spec.key(message);
  // The topic's compiled codec: the bytes toBinary writes, without its reflection (src/codec).
  return { topic, event: { key, value: messageCodec(spec.schema).encode(message), headers: eventHeaders(topic, origin.eventId, origin.trace) } };
}

/**
 * Publishes encoded events, one batch per topic (kafkajs is about 25 times
 * faster with batches), topics in `topicOrder` first, then in the order they
 * first appear. Order per key holds within a topic only, as on Kafka.
 */
export async function publishEvents(bus: EventBus, encoded: readonly EncodedEvent[], topicOrder: readonly Topic[] = []): Promise<void> {
  const byTopic = new Map<Topic, OutgoingEvent[]>(topicOrder.map((t) => [t, []]));
  for (const { topic, event } of encoded) {
    const list = byTopic.get(topic);
    if (list) list.push(event);
    else byTopic.set(topic, [event]);
  }
  for (const [topic, list] of byTopic) if (list.length > 0) await bus.publish(topic, list);
}

/** The meta of a received event, checked: a handler gets only well-formed ones. */
export interface ReceivedMeta {
  topic: Topic;
  /** The key id (subscriber id, email id), checked to be an id of the topic's kind. */
  key: string;
  eventId: string;
  accountId: string;
  mode: KeyMode;
  /** `<account id>:<mode>`: the tenant the event belongs to, as stored documents name it. */
  tenant: string;
  occurredAt: number;
  headers: Record<string, string>;
}

export type TopicHandler<T extends Topic> = (message: EventMessage<T>, meta: ReceivedMeta) => Promise<void>;
export type TopicHandlers = { [T in Topic]?: TopicHandler<T> };

/** Where skipped events are reported; pino loggers fit. */
export interface EventLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

export interface SubscribeEventsOptions {
  /** Consumer group: one per service, named after it. */
  group: string;
  /** One handler per consumed topic; they are the subscription's topics. */
  handlers: TopicHandlers;
  logger: EventLogger;
  fromBeginning?: boolean;
}

/**
 * Subscribes one group to the topics of `handlers`, and hands each handler the
 * decoded message and its checked meta. An event that does not decode, or
 * whose meta (event id, account id, mode) or key id is not well formed, is
 * logged by ids only (topic, key, event id) and skipped: redelivering it would
 * block its partition for ever. A handler that throws gets the event again
 * after the bus' backoff, as with `bus.subscribe`.
 */
export async function subscribeEvents(bus: EventBus, options: SubscribeEventsOptions): Promise<Subscription> {
  const topics = Object.keys(options.handlers).filter(isTopic);
  const { group } = options;
  const metrics = consumerMetrics();
  const subscription = await bus.subscribe({
    group,
    topics,
    ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
    handler: async (event) => {
      const decoded = decodeOrSkip(event, group, options.logger, metrics);
      if (!decoded) return;
      const handler = options.handlers[decoded.meta.topic] as TopicHandler<Topic> | undefined;
      if (!handler) return;
      const started = process.hrtime.bigint();
      let outcome = "handled";
      try {
        await inConsumerSpan(decoded.meta, group, () => handler(decoded.message as EventMessage<Topic>, decoded.meta));
      } catch (err) {
        outcome = "failed";
        throw err;
      } finally {
        metrics.handled.inc({ topic: decoded.meta.topic, group, outcome });
        metrics.duration.observe({ topic: decoded.meta.topic, group }, Number(process.hrtime.bigint() - started) / 1e9);
      }
    },
  });
  return observingLag(bus, group, topics, metrics, subscription);
}

/** The topic's events of a batch, decoded and checked, as a batch handler gets them. */
export interface DecodedBatchEvent<T extends Topic> {
  message: EventMessage<T>;
  meta: ReceivedMeta;
}

/** A batch handler of one topic: consecutive well-formed events of one of its partitions, in order. */
export type TopicBatchHandler<T extends Topic> = (events: Array<DecodedBatchEvent<T>>) => Promise<void>;
export type TopicBatchHandlers = { [T in Topic]?: TopicBatchHandler<T> };

export interface SubscribeEventBatchesOptions {
  /** Consumer group: one per service, named after it. */
  group: string;
  /** Most events one call gets (see SubscribeOptions.maxBatch). */
  maxBatch: number;
  /**
   * One handler per consumed topic; they are the subscription's topics. A
   * handler gets consecutive well-formed events of one partition of its topic,
   * in order (malformed ones are logged and skipped as with subscribeEvents).
   * When it throws, the same events come again after the bus' backoff, so it
   * must be idempotent per event, as every handler is.
   */
  handlers: TopicBatchHandlers;
  logger: EventLogger;
  fromBeginning?: boolean;
  /** See SubscribeOptions.gatherMs (Kafka: fewer, larger batches for a short delay). */
  gatherMs?: number;
  /**
   * Which tenants' events the handlers want, asked once per batch with the
   * distinct tenants of its events (read from each event's bytes by
   * `eventTenant`, without decoding it). Events of the tenants left out are
   * neither decoded nor checked nor handed over, and count as `passed`; the
   * bus moves past them with the batch. For a consumer that most events
   * concern no one at (webhooks: a tenant without an endpoint). Answered
   * at handling time, as a handler's own lookup would be: an event handled
   * after the answer changes is treated by the new one. An event whose
   * tenant cannot be read that way is decoded as usual (and skipped as
   * malformed when it is).
   */
  tenants?: (topic: Topic, tenants: readonly string[]) => Promise<ReadonlySet<string>>;
}

/**
 * subscribeEvents for fan-outs: the events of each topic in batches, so that
 * a handler can write the records of many events at once. One consumer span
 * per batch (tracing on): the child of its event's trace when it holds one
 * event, else linked to each event's trace, as OpenTelemetry's messaging
 * conventions have it.
 */
export async function subscribeEventBatches(bus: EventBus, options: SubscribeEventBatchesOptions): Promise<Subscription> {
  const topics = Object.keys(options.handlers).filter(isTopic);
  const { group } = options;
  const metrics = consumerMetrics();
  const subscription = await bus.subscribe({
    group,
    topics,
    maxBatch: options.maxBatch,
    ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
    ...(options.gatherMs !== undefined ? { gatherMs: options.gatherMs } : {}),
    batchHandler: async (received) => {
      // A batch is of one topic (one partition of it), whichever the bus.
      const topic = received[0]?.topic;
      const handler = topic !== undefined && isTopic(topic) ? (options.handlers[topic] as TopicBatchHandler<Topic> | undefined) : undefined;
      const tenantsOf = handler && options.tenants ? received.map((event) => eventTenant(event.value)) : undefined;
      const wanted = tenantsOf ? await wantedTenants(tenantsOf, topic as Topic, options.tenants!) : undefined;
      const batch: Array<DecodedBatchEvent<Topic>> = [];
      let passed = 0;
      for (let i = 0; i < received.length; i++) {
        const event = received[i]!;
        if (wanted !== undefined) {
          const tenant = tenantsOf![i];
          if (tenant !== undefined && !wanted.has(tenant)) {
            passed++;
            continue;
          }
        }
        const decoded = decodeOrSkip(event, group, options.logger, metrics);
        if (decoded) batch.push(decoded);
      }
      if (passed > 0) metrics.handled.inc({ topic: topic!, group, outcome: "passed" }, passed);
      if (!handler || batch.length === 0) return;
      const started = process.hrtime.bigint();
      let outcome = "handled";
      try {
        await inBatchSpan(batch.map((event) => event.meta), group, () => handler(batch));
      } catch (err) {
        outcome = "failed";
        throw err;
      } finally {
        metrics.handled.inc({ topic: topic!, group, outcome }, batch.length);
        metrics.batchDuration.observe({ topic: topic!, group }, Number(process.hrtime.bigint() - started) / 1e9);
      }
    },
  });
  return observingLag(bus, group, topics, metrics, subscription);
}

/** The tenants of a batch the consumer wants (SubscribeEventBatchesOptions.tenants), asked once per batch. */
async function wantedTenants(
  tenantsOf: ReadonlyArray<string | undefined>,
  topic: Topic,
  ask: (topic: Topic, tenants: readonly string[]) => Promise<ReadonlySet<string>>,
): Promise<ReadonlySet<string>> {
  const tenants = new Set<string>();
  for (const tenant of tenantsOf) if (tenant !== undefined) tenants.add(tenant);
  return tenants.size === 0 ? tenants : ask(topic, [...tenants]);
}

/**
 * The tenant (`<account id>:<mode>`) of an encoded event, read from its meta
 * (field 1 of every event message: account id, field 2, and mode, field 3)
 * without decoding the rest; undefined unless both are there and well formed
 * and the bytes are plainly well formed up to them. A consumer can so pass
 * over events of tenants it has nothing for at a fraction of a decode. Where
 * this answers and decoding reads a message, its meta names the same tenant
 * (a field repeated: the last one, as decoding merges).
 */
export function eventTenant(value: Uint8Array): string | undefined {
  // Where the account id and the mode lie (start, end); no string is built unless the tenant is new.
  let accountStart = -1;
  let accountEnd = -1;
  let modeStart = -1;
  let modeEnd = -1;
  const end = value.length;
  let pos = 0;
  while (pos < end) {
    const tag = value[pos++]!;
    // Tags of one byte only (fields 1 to 15), read past by their wire type; anything else gives up, as does
    // the meta's number under another wire type (decoding would read it as a message all the same).
    if (tag >= 0x80 || tag < 8) return undefined;
    const next = fieldEnd(value, pos, end, tag & 7);
    if (next < 0) return undefined;
    if (tag >>> 3 === 1) {
      if ((tag & 7) !== 2) return undefined;
      // The meta (from lengthEnd, as fieldEnd left it): its account id and mode.
      let at = lengthEnd;
      while (at < next) {
        const metaTag = value[at++]!;
        if (metaTag >= 0x80 || metaTag < 8) return undefined;
        const number = metaTag >>> 3;
        const after = fieldEnd(value, at, next, metaTag & 7);
        if (after < 0) return undefined;
        if (number === 2 || number === 3) {
          if ((metaTag & 7) !== 2) return undefined;
          if (number === 2) {
            accountStart = lengthEnd;
            accountEnd = after;
          } else {
            modeStart = lengthEnd;
            modeEnd = after;
          }
        }
        at = after;
      }
      if (at !== next) return undefined;
    }
    pos = next;
  }
  if (pos !== end || accountStart < 0 || modeEnd - modeStart !== 4) return undefined;
  const live = bytesAre(value, modeStart, LIVE);
  if (!live && !bytesAre(value, modeStart, TEST)) return undefined;
  // Events come in runs of one tenant: the last one found is kept, and compared byte for byte.
  const last = live ? lastLive : lastTest;
  if (last.account.length === accountEnd - accountStart && bytesAre(value, accountStart, last.account)) return last.tenant;
  let accountId = "";
  for (let i = accountStart; i < accountEnd; i++) accountId += String.fromCharCode(value[i]!);
  if (!isId("acc", accountId)) return undefined;
  last.account = value.slice(accountStart, accountEnd);
  last.tenant = `${accountId}:${live ? "live" : "test"}`;
  return last.tenant;
}

const LIVE = Uint8Array.from("live", (c) => c.charCodeAt(0));
const TEST = Uint8Array.from("test", (c) => c.charCodeAt(0));
const lastLive = { account: new Uint8Array(0), tenant: "" };
const lastTest = { account: new Uint8Array(0), tenant: "" };

function bytesAre(value: Uint8Array, at: number, expected: Uint8Array): boolean {
  for (let i = 0; i < expected.length; i++) if (value[at + i] !== expected[i]) return false;
  return true;
}

/** Where the bytes after the last length read start (readLength's second answer, without an object per call). */
let lengthEnd = 0;

/**
 * Where the field whose tag ended at `pos` ends, read past by its wire type
 * (a varint, 8 or 4 bytes, or a length-delimited field, whose content starts
 * at lengthEnd), or -1 if another wire type or a length running past `stop`.
 * A varint or fixed field may end past `stop`: the caller's check that its
 * fields end exactly at `stop` refuses that.
 */
function fieldEnd(value: Uint8Array, pos: number, stop: number, wireType: number): number {
  if (wireType === 0) {
    while (pos < stop && value[pos]! >= 0x80) pos++;
    return pos + 1;
  }
  if (wireType === 1) return pos + 8;
  if (wireType === 5) return pos + 4;
  if (wireType !== 2) return -1;
  const length = readLength(value, pos);
  return length < 0 || lengthEnd + length > stop ? -1 : lengthEnd + length;
}

/** A length prefix (a varint of up to 4 bytes: 256 MiB) at `pos`, or -1; sets lengthEnd. */
function readLength(value: Uint8Array, pos: number): number {
  let n = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= value.length) return -1;
    const byte = value[pos++]!;
    n |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      lengthEnd = pos;
      return n;
    }
  }
  return -1;
}

/** The subscription, with the group's lag read when Prometheus scrapes, until it stops. */
function observingLag(
  bus: EventBus,
  group: string,
  topics: Topic[],
  metrics: ReturnType<typeof consumerMetrics>,
  subscription: Subscription,
): Subscription {
  const stopObserving = metrics.lag.observe(async (gauge) => {
    for (const { topic, lag } of await bus.lag(group, topics)) gauge.set({ topic, group }, lag);
  });
  return {
    stop: async () => {
      stopObserving();
      await subscription.stop();
    },
  };
}

/** The decoded event, or undefined when it is malformed (then logged by ids and counted as skipped). */
function decodeOrSkip(
  event: ReceivedEvent,
  group: string,
  logger: EventLogger,
  metrics: ReturnType<typeof consumerMetrics>,
): DecodedBatchEvent<Topic> | undefined {
  const decoded = decodeEvent(event);
  if (decoded.ok) return decoded;
  metrics.handled.inc({ topic: event.topic, group, outcome: "skipped" });
  logger.error(
    { topic: event.topic, key: safeId(event.key), event_id: safeId(event.headers["event-id"] ?? "") },
    `${decoded.problem} event skipped`,
  );
  return undefined;
}

function consumerMetrics() {
  return {
    handled: counter("events_handled_total", "Events a consumer group took, by topic and outcome (handled, failed: redelivered, skipped: malformed).", [
      "topic",
      "group",
      "outcome",
    ]),
    duration: histogram("event_handling_duration_seconds", "Time a handler took on one event.", ["topic", "group"]),
    batchDuration: histogram("event_batch_handling_duration_seconds", "Time a batch handler took on one batch of events.", ["topic", "group"]),
    lag: observedGauge("event_consumer_lag", "Events of a topic a consumer group has not handled yet.", ["topic", "group"]),
  };
}

/** The handling of one event, in a consumer span continuing its producer's trace (tracing on only). */
async function inConsumerSpan(meta: ReceivedMeta, group: string, run: () => Promise<void>): Promise<void> {
  if (!tracingEnabled()) return run();
  const parent = extractTraceContext((name) => meta.headers[name]);
  const span = tracer().startSpan(
    `${meta.topic} process`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.operation.type": "process",
        "messaging.destination.name": meta.topic,
        "messaging.consumer.group.name": group,
        "messaging.message.id": meta.eventId,
        "emailsvc.account_id": meta.accountId,
        "emailsvc.key": meta.key,
      },
    },
    parent,
  );
  try {
    await context.with(trace.setSpan(parent, span), run);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : "error" });
    throw err;
  } finally {
    span.end();
  }
}

/** The handling of one batch, in one consumer span (tracing on only); see subscribeEventBatches. */
async function inBatchSpan(metas: ReceivedMeta[], group: string, run: () => Promise<void>): Promise<void> {
  if (metas.length === 1) return inConsumerSpan(metas[0]!, group, run);
  if (!tracingEnabled()) return run();
  const first = metas[0]!;
  const links = metas.flatMap((meta) => {
    const spanContext = trace.getSpanContext(extractTraceContext((name) => meta.headers[name]));
    return spanContext ? [{ context: spanContext }] : [];
  });
  const span = tracer().startSpan(
    `${first.topic} process`,
    {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        "messaging.operation.type": "process",
        "messaging.destination.name": first.topic,
        "messaging.consumer.group.name": group,
        "messaging.batch.message_count": metas.length,
      },
    },
    context.active(),
  );
  try {
    await context.with(trace.setSpan(context.active(), span), run);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : "error" });
    throw err;
  } finally {
    span.end();
  }
}

export type DecodedEvent =
  | { ok: true; message: EventMessage<Topic>; meta: ReceivedMeta }
  | { ok: false; problem: "unknown topic" | "undecodable" | "malformed" };

/** Decodes and checks one received event (what subscribeEvents does before a handler runs). */
export function decodeEvent(event: ReceivedEvent): DecodedEvent {
  if (!isTopic(event.topic)) return { ok: false, problem: "unknown topic" };
  const spec = TOPICS[event.topic] as unknown as TopicSpec;
  let message: EventMessage<Topic>;
  try {
    message = messageCodec(spec.schema).decode(event.value) as EventMessage<Topic>;
  } catch {
    return { ok: false, problem: "undecodable" };
  }
  const meta = (message as { meta?: { eventId: string; accountId: string; mode: string; occurredAt?: Parameters<typeof timestampMs>[0] } }).meta;
  const key = spec.key(message);
  if (
    !meta ||
    meta.eventId.length === 0 ||
    meta.eventId.length > 100 ||
    !isId("acc", meta.accountId) ||
    (meta.mode !== "live" && meta.mode !== "test") ||
    !isId(typeof spec.keyKind === "string" ? spec.keyKind : spec.keyKind(message), key)
  ) {
    return { ok: false, problem: "malformed" };
  }
  return {
    ok: true,
    message,
    meta: {
      topic: event.topic,
      key,
      eventId: meta.eventId,
      accountId: meta.accountId,
      mode: meta.mode,
      tenant: `${meta.accountId}:${meta.mode}`,
      occurredAt: meta.occurredAt ? timestampMs(meta.occurredAt) : 0,
      headers: event.headers,
    },
  };
}

/** A value fit for a log line: an id-like token, else a placeholder (a key or header could hold anything). */
function safeId(value: string): string {
  if (value === "") return "";
  return /^[A-Za-z0-9_.:-]{1,100}$/.test(value) ? value : "<not an id>";
}
