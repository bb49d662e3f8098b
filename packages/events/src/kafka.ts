// The production event bus: Apache Kafka through kafkajs.
//
// Producer: acks=all, idempotent, one `send` per `publish` (batched sends are
// some 25 times faster here, see the README), no automatic topic creation;
// a publish's events of one partition go as one packed record (kafka-pack.ts).
// Consumers: one kafkajs consumer per subscription, its group id the
// subscription's group, fed by kafkajs' eachBatch: each fetched batch of a
// partition, its packs unpacked, goes to the handler one event at a time, or
// in pieces of up to maxBatch events for a batch handler. A throwing handler
// gets the same events again after a backoff (100 ms doubling to 5 s), in
// place, and nothing after them in their partition goes first; a record's
// offset is committed only once the handler returned on its last event, at
// most once a second per subscription (and at once on stop and before a
// rebalance), not after every fetched batch.

import {
  type Admin,
  type Consumer,
  type EachBatchPayload,
  type IHeaders,
  type KafkaMessage,
  type LogEntry,
  type Message,
  type Producer,
  type RetryOptions,
  Kafka,
  KafkaJSError,
  Partitioners,
  logLevel,
} from "kafkajs";
import {
  type BusLogEntry,
  type BusLogger,
  DEFAULT_BACKOFF,
  assertTopicNames,
  backoffDelay,
  batchDelivery,
  errorMessage,
  sleep,
  stderrLogger,
} from "./shared.js";
import { PACK_HEADER, PACK_VERSION, packEvents, unpackEvents } from "./kafka-pack.js";
import { partitionOfKey } from "./kafka-partitioner.js";
import type {
  EventBatchHandler,
  EventBus,
  OutgoingEvent,
  ReceivedEvent,
  SubscribeOptions,
  Subscription,
  TopicLag,
} from "./types.js";

export interface KafkaEventBusConfig {
  /** Bootstrap brokers, `host:port`. */
  brokers: string[];
  /** Names this process in broker logs and metrics, e.g. the service name. */
  clientId: string;
  /** Partitions of the topics `ensureTopics` creates (default 3). */
  topicPartitions?: number;
  /** Replication factor of the topics `ensureTopics` creates (default 1: a single broker). */
  replicationFactor?: number;
  /**
   * `retention.ms` of the topics `ensureTopics` creates (unset: the broker's
   * default, 7 days unless changed). Events carry ids only, but a subscriber
   * id is personal data while it can be linked to the person: this bounds how
   * long an erased subscriber's id stays in Kafka. Topics that exist are not
   * changed.
   */
  topicRetentionMs?: number;
  /** Where kafkajs' warnings and errors go; default JSON lines on stderr. */
  logger?: BusLogger;
  /**
   * Whether `publish` packs the events of a partition into one record
   * (kafka-pack.ts; default true). Consumers read packs and plain records
   * alike; a consumer of a version before packs skips a pack as undecodable, so
   * a rolling upgrade sets this false until every service is upgraded.
   */
  packEvents?: boolean;
}

// Timeouts for a broker close by (same host or cluster). kafkajs' defaults
// are made for slower networks.
/** TCP connect to a broker. */
const CONNECTION_TIMEOUT_MS = 3_000;
/**
 * A member that sent no heartbeat for this long leaves its group: a crashed
 * consumer's partitions move on after it.
 */
const SESSION_TIMEOUT_MS = 10_000;
/**
 * kafkajs heartbeats when asked, at most this often: we ask after each piece
 * of a batch, between redeliveries and every this often while a handler runs.
 */
const HEARTBEAT_INTERVAL_MS = 1_000;
/** How long the group waits for members to re-join during a rebalance. */
const REBALANCE_TIMEOUT_MS = 30_000;
/** Longest a fetch waits for new data; also bounds how long `stop()` waits for an idle consumer. */
const FETCH_MAX_WAIT_MS = 500;
/**
 * Handled offsets are committed at most this often (and at once when the
 * subscription stops, or before a rebalance): a commit after every fetched
 * batch was a request to the broker, and a write to its offsets topic, per
 * batch of each group. A crash repeats at most this much handled work.
 */
const COMMIT_INTERVAL_MS = 1_000;
/** A subscription's `gatherMs`: a fetch waits (at most that long) for this many bytes. */
const GATHER_MIN_BYTES = 64 * 1024;
/** Largest `gatherMs`. */
const GATHER_MAX_MS = 1_000;
/** `subscribe` gives up when the consumer has not joined its group and fetched by then. */
const SUBSCRIBE_TIMEOUT_MS = 60_000;

/** Connecting, metadata, admin calls: quick retries, then give up (callers retry, e.g. the outbox). */
const CLIENT_RETRY: RetryOptions = {
  initialRetryTime: DEFAULT_BACKOFF.initialMs,
  maxRetryTime: DEFAULT_BACKOFF.maxMs,
  multiplier: 2,
  factor: 0.2,
  retries: 8,
};

/**
 * Consumers ride out broker trouble (lost connection, coordinator moving)
 * without end, with the same capped backoff. Handler failures never reach this
 * retrier: the adapter redelivers those itself (see `deliver`).
 */
const CONSUMER_RETRY: RetryOptions = { ...CLIENT_RETRY, retries: Number.MAX_SAFE_INTEGER };


export class KafkaEventBus implements EventBus {
  private readonly kafka: Kafka;
  private readonly topicPartitions: number;
  private readonly replicationFactor: number;
  private readonly topicRetentionMs: number | undefined;
  private readonly packEvents: boolean;
  private producer: Promise<Producer> | undefined;
  private admin: Promise<Admin> | undefined;
  /** Topics known to exist; publish and subscribe check against it. */
  private readonly knownTopics = new Set<string>();
  /** Partitions per topic, read once from the broker: publish picks each event's partition itself to pack them. */
  private readonly partitionCounts = new Map<string, Promise<number>>();
  private readonly subscriptions = new Set<KafkaSubscription>();
  private closing: Promise<void> | undefined;
  private readonly log: BusLogger;

  constructor(config: KafkaEventBusConfig) {
    if (config.brokers.length === 0) throw new Error("KafkaEventBus needs at least one broker");
    this.topicPartitions = config.topicPartitions ?? 3;
    this.replicationFactor = config.replicationFactor ?? 1;
    this.topicRetentionMs = config.topicRetentionMs;
    this.packEvents = config.packEvents ?? true;
    this.log = config.logger ?? stderrLogger;
    this.kafka = new Kafka({
      clientId: config.clientId,
      brokers: config.brokers,
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      retry: CLIENT_RETRY,
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(this.log),
    });
  }

  async ensureTopics(topics: string[]): Promise<void> {
    this.assertOpen();
    const wanted = [...new Set(topics)];
    assertTopicNames(wanted);
    const admin = await this.connectedAdmin();
    const existing = new Set(await admin.listTopics());
    const missing = wanted.filter((topic) => !existing.has(topic));
    if (missing.length > 0) {
      // Resolves false when another process created one of them meanwhile; fine.
      await admin.createTopics({
        topics: missing.map((topic) => ({
          topic,
          numPartitions: this.topicPartitions,
          replicationFactor: this.replicationFactor,
          ...(this.topicRetentionMs !== undefined ? { configEntries: [{ name: "retention.ms", value: String(this.topicRetentionMs) }] } : {}),
        })),
        // Waited for below: kafkajs' own wait gives up after CLIENT_RETRY's
        // quick retries with "This server does not host this topic-partition"
        // (a service died at start so in CI, on a loaded machine).
        waitForLeaders: false,
      });
    }
    // A replica starting beside another may find the topics just created by
    // it, before their partitions have leaders: a subscribe or publish then
    // fails with "This server does not host this topic-partition". Wait for
    // the leaders whoever created the topics, up to LEADERS_TIMEOUT_MS.
    await untilLeadersElected(admin, wanted);
    wanted.forEach((topic) => this.knownTopics.add(topic));
  }

  async publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    this.assertOpen();
    if (events.length === 0) return;
    await this.assertTopicsExist([topic]);
    const [producer, partitions] = await Promise.all([this.connectedProducer(), this.partitionCount(topic)]);
    // The events of each partition, in order, packed into as few records as
    // fit (kafka-pack.ts): the partition is the one kafkajs' default
    // partitioner gives the key (kafka-partitioner.ts), so an event lands where it would alone.
    const byPartition = new Map<number, OutgoingEvent[]>();
    for (const event of events) {
      const partition = partitionOfKey(event.key, partitions);
      const list = byPartition.get(partition);
      if (list) list.push(event);
      else byPartition.set(partition, [event]);
    }
    const messages: Message[] = [];
    for (const [partition, list] of byPartition) {
      for (const record of this.packEvents ? packEvents(list) : list.map((event) => ({ packed: false as const, event }))) {
        messages.push(
          record.packed
            ? { partition, key: null, value: record.value, headers: { [PACK_HEADER]: PACK_VERSION } }
            : {
                partition,
                key: record.event.key,
                // A view on the same bytes, no copy.
                value: Buffer.from(record.event.value.buffer, record.event.value.byteOffset, record.event.value.byteLength),
                headers: record.event.headers ? { ...record.event.headers } : {},
              },
        );
      }
    }
    // One request for the whole batch. The idempotent producer retries a
    // failed send without end (capped backoff): this waits out a broker restart
    // or outage instead of failing, and its retries never duplicate an event.
    await producer.send({ topic, acks: -1, messages });
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    this.assertOpen();
    const { group } = options;
    const topics = [...new Set(options.topics)];
    if (!group) throw new Error("subscribe needs a group");
    if (topics.length === 0) throw new Error("subscribe needs at least one topic");
    const { deliver, max } = batchDelivery(options);
    const gatherMs = options.gatherMs ?? 0;
    if (!Number.isInteger(gatherMs) || gatherMs < 0 || gatherMs > GATHER_MAX_MS) {
      throw new RangeError(`gatherMs must be an integer from 0 to ${GATHER_MAX_MS}, got ${String(options.gatherMs)}`);
    }
    await this.assertTopicsExist(topics);

    const consumer = this.kafka.consumer({
      groupId: group,
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: HEARTBEAT_INTERVAL_MS,
      rebalanceTimeout: REBALANCE_TIMEOUT_MS,
      // With gatherMs the broker holds a fetch until GATHER_MIN_BYTES are there
      // or gatherMs passed; else it answers as soon as there is anything.
      ...(gatherMs > 0 ? { minBytes: GATHER_MIN_BYTES, maxWaitTimeInMs: gatherMs } : { maxWaitTimeInMs: FETCH_MAX_WAIT_MS }),
      allowAutoTopicCreation: false,
      retry: CONSUMER_RETRY,
    });
    const subscription = new KafkaSubscription(consumer, () => this.subscriptions.delete(subscription));
    this.subscriptions.add(subscription);

    const started = untilConsuming(consumer);
    started.promise.catch(() => undefined); // awaited below; never an unhandled rejection
    try {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: options.fromBeginning ?? true });
      await consumer.run({
        // Offsets are resolved here, after the handler returned on them, and
        // committed by the subscription (OffsetCommits): resolved offsets only,
        // at most every COMMIT_INTERVAL_MS, and on stop. An event whose handler
        // never succeeded stays uncommitted.
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: (payload) => this.deliverBatch(group, deliver, max, payload, subscription),
      });
      await started.promise;
    } catch (error) {
      started.cancel();
      await subscription.stop();
      throw error;
    }
    return subscription;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((s) => s.stop()));
      const clients = await Promise.allSettled([this.producer, this.admin]);
      await Promise.all(
        clients.map((client) =>
          client.status === "fulfilled" && client.value ? client.value.disconnect() : undefined,
        ),
      );
    })();
    return this.closing;
  }

  /**
   * Hands a fetched batch of one partition to the handler in pieces of at most
   * `max` events, in order. Calls the handler on a piece until it succeeds,
   * waiting a backoff after each failure (100 ms doubling to 5 s), so that
   * nothing after it in its partition is delivered first; then resolves its
   * last offset. Between attempts it heartbeats to keep the group membership;
   * if the group is rebalancing that throws, kafkajs re-joins and whoever gets
   * the partition fetches these events again. When the subscription stops
   * meanwhile, the piece is left uncommitted for the next consumer of the group.
   */
  private async deliverBatch(
    group: string,
    deliver: EventBatchHandler,
    max: number,
    payload: EachBatchPayload,
    subscription: KafkaSubscription,
  ): Promise<void> {
    const { batch, resolveOffset, isRunning, isStale } = payload;
    const { signal, commits } = subscription;
    commits.batchStarted(payload);
    // Before a rebalance (the heartbeat fails), what was handled is committed, as kafkajs' auto-commit does.
    const heartbeat = () => payload.heartbeat().catch(async (error: unknown) => {
      await commits.commitNow().catch(() => undefined);
      throw error;
    });
    const { topic, partition, messages } = batch;
    const events = unpackBatch(messages);
    for (let from = 0; from < events.length; from += max) {
      if (!isRunning() || isStale()) return;
      const piece = events.slice(from, from + max);
      for (let attempt = 0; ; attempt++) {
        if (signal.aborted) throw new SubscriptionStoppingError();
        let failure: unknown;
        // Heartbeats while the handler runs: a batch of sends may take longer
        // than the session timeout, and kafkajs heartbeats only when asked.
        const beating = setInterval(() => heartbeat().catch(() => undefined), HEARTBEAT_INTERVAL_MS);
        try {
          // A fresh copy per attempt: a failed attempt may have changed the last one.
          await deliver(piece.map((event) => toReceivedEvent(topic, event)));
          break;
        } catch (error) {
          failure = error;
        } finally {
          clearInterval(beating);
        }
        const delay = backoffDelay(DEFAULT_BACKOFF, attempt);
        logSafely(this.log, {
          level: "warn",
          namespace: "kafka",
          message: "handler failed; redelivering the same events after a backoff",
          fields: {
            group,
            topic,
            partition,
            offset: piece[0]!.offset,
            events: piece.length,
            attempt: attempt + 1,
            delay_ms: delay,
            error: errorMessage(failure),
          },
        });
        await sleep(delay, signal);
        if (!signal.aborted) await heartbeat();
      }
      // The last record whose events are all handled now: a pack cut by
      // `max` is committed once its last event is, so a crash or stop before
      // that delivers its earlier events again (at least once).
      for (let i = piece.length - 1; i >= 0; i--) {
        if (piece[i]!.endsRecord) {
          resolveOffset(piece[i]!.offset);
          await commits.resolved();
          break;
        }
      }
      await heartbeat();
    }
  }

  async lag(group: string, topics: string[]): Promise<TopicLag[]> {
    const admin = await this.connectedAdmin();
    const existing = topics.filter((topic) => this.knownTopics.has(topic));
    if (existing.length === 0) return [];
    const committed = await admin.fetchOffsets({ groupId: group, topics: existing });
    return Promise.all(
      committed.map(async ({ topic, partitions }) => {
        const ends = await admin.fetchTopicOffsets(topic);
        const lag = ends.reduce((sum, end) => {
          // -1: the group never committed in this partition; it starts at the oldest retained event.
          const at = Number(partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
          return sum + Math.max(0, Number(end.high) - (at < 0 ? Number(end.low) : at));
        }, 0);
        return { topic, lag };
      }),
    );
  }

  /** How many partitions `topic` has (asked once; a topic's partitions are fixed here, see ensureTopics). */
  private partitionCount(topic: string): Promise<number> {
    let count = this.partitionCounts.get(topic);
    if (!count) {
      count = this.connectedAdmin()
        .then((admin) => admin.fetchTopicMetadata({ topics: [topic] }))
        .then(({ topics }) => {
          const partitions = topics.find((t) => t.name === topic)?.partitions.length ?? 0;
          if (partitions < 1) throw new Error(`no partitions known for topic ${topic}`);
          return partitions;
        });
      count.catch(() => this.partitionCounts.delete(topic)); // asked again on the next publish
      this.partitionCounts.set(topic, count);
    }
    return count;
  }

  /** Rejects when one of `topics` does not exist; refreshes the list once before deciding. */
  private async assertTopicsExist(topics: string[]): Promise<void> {
    const unknown = topics.filter((topic) => !this.knownTopics.has(topic));
    if (unknown.length === 0) return;
    const admin = await this.connectedAdmin();
    for (const topic of await admin.listTopics()) this.knownTopics.add(topic);
    const missing = unknown.filter((topic) => !this.knownTopics.has(topic));
    if (missing.length > 0) {
      throw new Error(`no such topic: ${missing.join(", ")} (call ensureTopics first)`);
    }
  }

  private connectedProducer(): Promise<Producer> {
    this.producer ??= connect(() =>
      this.kafka.producer({
        idempotent: true,
        // Idempotence in kafkajs relies on one request at a time per broker.
        maxInFlightRequests: 1,
        // Retry a failed send until the broker takes it (backoff capped at 5 s).
        // Giving up would let kafkajs reuse the failed batch's sequence numbers
        // for the next batch, which the broker may then drop as a duplicate.
        retry: { retries: Number.MAX_SAFE_INTEGER },
        allowAutoTopicCreation: false,
        // The partitioner Java clients use (murmur2 of the key); choosing it
        // explicitly also silences kafkajs' KAFKAJS_NO_PARTITIONER_WARNING.
        createPartitioner: Partitioners.DefaultPartitioner,
      }),
    ).catch((error: unknown) => {
      this.producer = undefined; // try again on the next call
      throw error;
    });
    return this.producer;
  }

  private connectedAdmin(): Promise<Admin> {
    this.admin ??= connect(() => this.kafka.admin()).catch((error: unknown) => {
      this.admin = undefined;
      throw error;
    });
    return this.admin;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error("the event bus is closed");
  }
}

class KafkaSubscription implements Subscription {
  private readonly abort = new AbortController();
  private stopping: Promise<void> | undefined;
  readonly commits = new OffsetCommits();

  constructor(
    private readonly consumer: Consumer,
    private readonly onStopped: () => void,
  ) {}

  /** Aborted when stopping: ends a redelivery backoff early. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  stop(): Promise<void> {
    this.abort.abort();
    this.stopping ??= (async () => {
      // What was handled is committed before the consumer leaves (kafkajs'
      // disconnect stops fetching, waits for the in-flight eachBatch, which
      // commits at once from now on, and leaves the group, so that a
      // successor joins at once).
      this.commits.stopping = true;
      await this.commits.commitNow().catch(() => undefined);
      await this.consumer.disconnect();
    })().finally(this.onStopped);
    return this.stopping;
  }
}

/**
 * Commits a subscription's resolved offsets at most every
 * COMMIT_INTERVAL_MS: after a batch when the interval has passed, else by a
 * timer, so that an idle consumer does not keep handled events uncommitted;
 * at once when stopping. It commits through the latest eachBatch payload
 * (kafkajs' consumer group of the current generation; its `commitOffsets`
 * does nothing once the consumer is stopping). A failed commit is left to
 * the next one (commits are cumulative per partition): at worst the events
 * are delivered again.
 */
class OffsetCommits {
  stopping = false;
  private payload: EachBatchPayload | undefined;
  /** 0: the first handled batch is committed at once. */
  private lastCommit = 0;
  private timer: NodeJS.Timeout | undefined;

  batchStarted(payload: EachBatchPayload): void {
    this.payload = payload;
  }

  /** After an offset was resolved: commits now if due (or stopping), else makes sure the timer will. */
  async resolved(): Promise<void> {
    const wait = this.lastCommit + COMMIT_INTERVAL_MS - Date.now();
    if (this.stopping || wait <= 0) return this.commitNow();
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (!this.stopping) this.commitNow().catch(() => undefined);
    }, wait);
  }

  /** Commits every resolved, uncommitted offset of the consumer (one request; none when there are none). */
  async commitNow(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const payload = this.payload;
    if (!payload) return;
    this.lastCommit = Date.now();
    const uncommitted = payload.uncommittedOffsets();
    if (uncommitted.topics.length > 0) await payload.commitOffsetsIfNecessary(uncommitted);
  }
}

/**
 * Thrown from eachBatch to leave events not yet handled uncommitted when
 * the subscription stops during its redelivery backoff. A retriable KafkaJSError,
 * so that kafkajs neither logs it as a handler error nor crashes the consumer
 * (it is stopping anyway). Thrown for nothing else: kafkajs would stop a
 * consumer for good on some error types (TypeError, ...), which is why handler
 * errors never reach it.
 */
class SubscriptionStoppingError extends KafkaJSError {
  override readonly name = "SubscriptionStoppingError";
  constructor() {
    super("subscription stopping; the event stays uncommitted", { retriable: true });
  }
}

/** Calls the logger; a throwing logger must not break delivery or kafkajs. */
function logSafely(logger: BusLogger, entry: BusLogEntry): void {
  try {
    logger(entry);
  } catch {
    // ignored on purpose
  }
}

/** How long `ensureTopics` waits for the partitions of topics another process just created to get leaders. */
const LEADERS_TIMEOUT_MS = 30_000;

/** Resolves once every partition of `topics` has a leader; retries the metadata request until then (at most LEADERS_TIMEOUT_MS). */
async function untilLeadersElected(admin: Admin, topics: string[]): Promise<void> {
  const deadline = Date.now() + LEADERS_TIMEOUT_MS;
  for (let attempt = 0; ; attempt++) {
    let missing: unknown;
    try {
      const { topics: described } = await admin.fetchTopicMetadata({ topics });
      const leaderless = described.filter((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0)).map((t) => t.name);
      if (leaderless.length === 0) return;
      missing = `no leader yet for ${leaderless.join(", ")}`;
    } catch (error) {
      missing = error;
    }
    if (Date.now() > deadline) throw new Error(`topics without leaders after ${LEADERS_TIMEOUT_MS} ms: ${errorMessage(missing)}`);
    await new Promise((resolve) => setTimeout(resolve, backoffDelay(DEFAULT_BACKOFF, attempt)));
  }
}

/** Creates a kafkajs client and connects it; disconnects it again if connecting failed. */
async function connect<T extends Producer | Admin>(create: () => T): Promise<T> {
  const client = create();
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.disconnect().catch(() => undefined);
    throw error;
  }
}

/**
 * Resolves after the consumer's first fetch: by then it has joined its group
 * and fixed its start offsets (earliest/latest for a new group), so nothing
 * published afterwards is missed. Rejects when it crashed for good or took too
 * long.
 */
function untilConsuming(consumer: Consumer): { promise: Promise<void>; cancel: () => void } {
  let cancel = () => {};
  const promise = new Promise<void>((resolve, reject) => {
    const removers: (() => void)[] = [];
    const timer = setTimeout(
      () => finish(new Error(`consumer did not start within ${SUBSCRIBE_TIMEOUT_MS} ms`)),
      SUBSCRIBE_TIMEOUT_MS,
    );
    const finish = (error?: Error) => {
      clearTimeout(timer);
      removers.forEach((remove) => remove());
      if (error) reject(error);
      else resolve();
    };
    removers.push(consumer.on(consumer.events.FETCH, () => finish()));
    removers.push(
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        if (!payload.restart) finish(payload.error);
      }),
    );
    cancel = () => {
      clearTimeout(timer);
      removers.forEach((remove) => remove());
      resolve();
    };
  });
  return { promise, cancel };
}

/** One event of a fetched batch: its record's offset, and whether it is the last event of that record. */
interface FetchedEvent {
  offset: string;
  endsRecord: boolean;
  key: string;
  /** A view on the fetch response's bytes: copied for each attempt (toReceivedEvent). */
  value: Uint8Array;
  headers: Record<string, string>;
}

/**
 * The events of a fetched batch's records, in order: a pack's events one by
 * one (kafka-pack.ts), any other record as one event. A record marked as a
 * pack that does not unpack is handed over whole as one event, which the
 * registry then finds undecodable and skips with a log line (a pack blocking
 * its partition for ever would be worse).
 */
function unpackBatch(messages: readonly KafkaMessage[]): FetchedEvent[] {
  const events: FetchedEvent[] = [];
  for (const message of messages) {
    const headers = decodeHeaders(message.headers);
    const value = message.value ?? Buffer.alloc(0);
    if (headers[PACK_HEADER] !== undefined) {
      const unpacked = headers[PACK_HEADER] === PACK_VERSION ? unpackEvents(value) : undefined;
      if (unpacked) {
        unpacked.forEach((event, i) => events.push({ offset: message.offset, endsRecord: i === unpacked.length - 1, ...event }));
        continue;
      }
    }
    events.push({ offset: message.offset, endsRecord: true, key: message.key ? message.key.toString("utf8") : "", value, headers });
  }
  return events;
}

function toReceivedEvent(topic: string, event: FetchedEvent): ReceivedEvent {
  return {
    topic,
    key: event.key,
    // A copy: kafkajs' Buffer is a slice of the whole fetch response.
    value: new Uint8Array(event.value),
    headers: { ...event.headers },
  };
}

/** Kafka headers are bytes and may repeat; ours are strings, the last value wins. */
function decodeHeaders(headers: IHeaders | undefined): Record<string, string> {
  const decoded: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers ?? {})) {
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    if (value !== undefined) decoded[name] = value.toString();
  }
  return decoded;
}

/** Fields of kafkajs log entries worth keeping. Anything else (stacks, requests, payloads) is dropped. */
const LOG_FIELDS = [
  "groupId",
  "memberId",
  "topic",
  "partition",
  "offset",
  "nodeId",
  "broker",
  "retryCount",
  "retryTime",
  "error",
] as const;

/** Broker answers that kafkajs retries by itself. */
const TRANSIENT_BROKER_STATES = [
  "The coordinator is loading",
  "The coordinator is not available",
  "This is not the correct coordinator",
  "There is no leader for this topic-partition",
  "This server is not the leader for that topic-partition",
] as const;

/**
 * Routes kafkajs' WARN and ERROR entries to a BusLogger, keeping only the
 * fields above: kafkajs never logs message values itself, and this keeps it so.
 */
function kafkaLogCreator(logger: BusLogger) {
  return () =>
    ({ namespace, level, log }: LogEntry): void => {
      if (level !== logLevel.ERROR && level !== logLevel.WARN) return;
      const extra = log as unknown as Record<string, unknown>;
      const fields: BusLogEntry["fields"] = {};
      for (const name of LOG_FIELDS) {
        const value = extra[name];
        if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
          fields[name] = value;
        } else if (value instanceof Error) {
          fields[name] = errorMessage(value);
        }
      }
      // kafkajs logs every error response of a request at ERROR, also the
      // transient states of a broker that is starting or moving a coordinator,
      // which it retries itself: those are warnings, not failures.
      const transient = typeof fields.error === "string" && TRANSIENT_BROKER_STATES.some((state) => (fields.error as string).includes(state));
      logSafely(logger, {
        level: level === logLevel.ERROR && !transient ? "error" : "warn",
        namespace: namespace ? `kafkajs.${namespace}` : "kafkajs",
        message: log.message,
        fields,
      });
    };
}
