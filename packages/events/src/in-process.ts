import { setMaxListeners } from "node:events";
// The embedded event bus: the default when no Kafka is configured (`npm start`,
// tests of a single service). It behaves like a small Kafka inside the process:
// per topic a fixed number of partitions chosen by hashing the key, an
// append-only log per partition, and per consumer group a committed position
// per partition.
//
// MEMORY ONLY. The publisher-side outbox (in the services) keeps an event until
// `publish` resolved; from then on it lives only here, so a restart loses every
// event not yet handled by all of its groups, and the groups' positions. That
// is the price of the embedded single-process mode; production runs on Kafka
// (kafka.ts), which keeps events on disk.

import {
  type Backoff,
  type BusLogEntry,
  type BusLogger,
  DEFAULT_BACKOFF,
  assertTopicNames,
  backoffDelay,
  errorMessage,
  sleep,
  stderrLogger,
} from "./shared.js";
import type {
  EventBus,
  EventHandler,
  OutgoingEvent,
  ReceivedEvent,
  SubscribeOptions,
  Subscription,
} from "./types.js";

export interface InProcessEventBusOptions {
  /** Partitions per topic; order holds per partition, so per key (default 3, as on Kafka). */
  partitions?: number;
  /**
   * About how many events each topic keeps (default 10,000), split evenly over
   * its partitions. A group that falls further behind skips the oldest events,
   * with a warning; a group subscribing later with `fromBeginning` gets what is
   * still retained.
   */
  retention?: number;
  /** Redelivery delay after a handler threw (default 100 ms doubling up to 5 s). */
  backoff?: Backoff;
  /** Where warnings go (failed handlers, skipped events); default JSON lines on stderr. */
  logger?: BusLogger;
}


interface StoredEvent {
  key: string;
  value: Uint8Array;
  headers: Record<string, string>;
}

/** One partition of a topic: an append-only log trimmed at its head. */
class PartitionLog {
  /** Offset of `entries[0]`; grows as old entries are trimmed. */
  private base = 0;
  private readonly entries: StoredEvent[] = [];
  /** Consumers waiting for the next append. */
  private readonly waiters = new Set<() => void>();

  constructor(private readonly capacity: number) {}

  /** Offset of the oldest retained event. */
  get start(): number {
    return this.base;
  }

  /** Offset the next appended event will get. */
  get end(): number {
    return this.base + this.entries.length;
  }

  at(offset: number): StoredEvent | undefined {
    return this.entries[offset - this.base];
  }

  append(event: StoredEvent): void {
    this.entries.push(event);
    const excess = this.entries.length - this.capacity;
    if (excess > 0) {
      this.entries.splice(0, excess);
      this.base += excess;
    }
    if (this.waiters.size > 0) {
      // Wake consumers on a later turn of the event loop, so that no handler
      // ever runs inside `publish`.
      const waiters = [...this.waiters];
      this.waiters.clear();
      setImmediate(() => waiters.forEach((wake) => wake()));
    }
  }

  /** Resolves on the next append, or when `signal` aborts. */
  nextAppend(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

/** What one group has consumed of one topic: the next offset per partition. */
type Positions = number[];

export class InProcessEventBus implements EventBus {
  private readonly partitions: number;
  private readonly capacity: number;
  private readonly backoff: Backoff;
  private readonly log: BusLogger;

  private readonly topics = new Map<string, PartitionLog[]>();
  /** group -> topic -> positions. Kept after a subscription stops, so the group resumes. */
  private readonly positions = new Map<string, Map<string, Positions>>();
  /** group -> topics it consumes right now (one consumer per group and topic). */
  private readonly active = new Map<string, Set<string>>();
  private readonly subscriptions = new Set<InProcessSubscription>();
  private closing: Promise<void> | undefined;

  constructor(options: InProcessEventBusOptions = {}) {
    this.partitions = options.partitions ?? 3;
    const retention = options.retention ?? 10_000;
    if (!Number.isInteger(this.partitions) || this.partitions < 1) {
      throw new RangeError("partitions must be a positive integer");
    }
    if (!Number.isInteger(retention) || retention < 1) {
      throw new RangeError("retention must be a positive integer");
    }
    this.capacity = Math.ceil(retention / this.partitions);
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.log = options.logger ?? stderrLogger;
  }

  async ensureTopics(topics: string[]): Promise<void> {
    this.assertOpen();
    assertTopicNames(topics);
    for (const topic of topics) {
      if (!this.topics.has(topic)) {
        this.topics.set(
          topic,
          Array.from({ length: this.partitions }, () => new PartitionLog(this.capacity)),
        );
      }
    }
  }

  async publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    this.assertOpen();
    if (events.length === 0) return;
    const partitions = this.topicLog(topic);
    // Validate the whole batch before appending any of it: all or nothing.
    for (const event of events) {
      if (typeof event.key !== "string" || !(event.value instanceof Uint8Array)) {
        throw new TypeError("an event needs a string key and a Uint8Array value");
      }
    }
    for (const event of events) {
      // Copies, so that the publisher reusing its buffers cannot change the log.
      const stored: StoredEvent = {
        key: event.key,
        value: event.value.slice(),
        headers: { ...event.headers },
      };
      partitions[partitionOf(event.key, partitions.length)]!.append(stored);
    }
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    this.assertOpen();
    const { group, handler } = options;
    const topics = [...new Set(options.topics)];
    if (!group) throw new Error("subscribe needs a group");
    if (topics.length === 0) throw new Error("subscribe needs at least one topic");
    const logs = topics.map((topic) => this.topicLog(topic));

    const activeTopics = this.active.get(group) ?? new Set<string>();
    const busy = topics.filter((topic) => activeTopics.has(topic));
    if (busy.length > 0) {
      throw new Error(
        `group "${group}" already consumes ${busy.join(", ")}: one subscription per group and topic`,
      );
    }
    topics.forEach((topic) => activeTopics.add(topic));
    this.active.set(group, activeTopics);

    // Fix the start positions now, so that every event published after
    // `subscribe` resolves is delivered, even with fromBeginning false.
    const groupPositions = this.positions.get(group) ?? new Map<string, Positions>();
    this.positions.set(group, groupPositions);
    const fromBeginning = options.fromBeginning ?? true;
    const positions = topics.map((topic, i) => {
      let known = groupPositions.get(topic);
      if (!known) {
        known = logs[i]!.map((log) => (fromBeginning ? log.start : log.end));
        groupPositions.set(topic, known);
      }
      return known;
    });

    const subscription = new InProcessSubscription(() => {
      topics.forEach((topic) => activeTopics.delete(topic));
      this.subscriptions.delete(subscription);
    });
    this.subscriptions.add(subscription);
    topics.forEach((topic, i) => {
      logs[i]!.forEach((log, partition) => {
        subscription.track(
          this.consume({
            group,
            topic,
            partition,
            log,
            positions: positions[i]!,
            handler,
            signal: subscription.signal,
          }),
        );
      });
    });
    return subscription;
  }

  close(): Promise<void> {
    this.closing ??= Promise.all([...this.subscriptions].map((s) => s.stop())).then(() => undefined);
    return this.closing;
  }

  /**
   * Delivers one partition of one topic to one group, in order: the next event
   * only after the handler succeeded on the current one; a failure retries the
   * same event after a backoff.
   */
  private async consume(c: {
    group: string;
    topic: string;
    partition: number;
    log: PartitionLog;
    positions: Positions;
    handler: EventHandler;
    signal: AbortSignal;
  }): Promise<void> {
    const { group, topic, partition, log, positions, signal } = c;
    // Never start a handler inside `subscribe` itself.
    await new Promise((resolve) => setImmediate(resolve));
    let failures = 0;
    while (!signal.aborted) {
      let offset = positions[partition]!;
      if (offset < log.start) {
        this.warn("group fell behind the retained log; skipping events", {
          group,
          topic,
          partition,
          skipped: log.start - offset,
        });
        offset = positions[partition] = log.start;
      }
      const stored = log.at(offset);
      if (!stored) {
        await log.nextAppend(signal);
        continue;
      }
      try {
        await c.handler({
          topic,
          key: stored.key,
          value: stored.value.slice(),
          headers: { ...stored.headers },
        } satisfies ReceivedEvent);
        positions[partition] = offset + 1; // commit
        failures = 0;
      } catch (error) {
        const delay = backoffDelay(this.backoff, failures++);
        this.warn("handler failed; redelivering the same event after a backoff", {
          group,
          topic,
          partition,
          offset,
          attempt: failures,
          delay_ms: delay,
          error: errorMessage(error),
        });
        await sleep(delay, signal);
      }
    }
  }

  /** Logs a warning; a throwing logger must not stop delivery. */
  private warn(message: string, fields: BusLogEntry["fields"]): void {
    try {
      this.log({ level: "warn", namespace: "in-process", message, fields });
    } catch {
      // ignored on purpose
    }
  }

  private topicLog(topic: string): PartitionLog[] {
    const partitions = this.topics.get(topic);
    if (!partitions) {
      throw new Error(`no such topic: ${topic} (call ensureTopics first)`);
    }
    return partitions;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error("the event bus is closed");
  }
}

class InProcessSubscription implements Subscription {
  private readonly abort = new AbortController();
  private readonly consumers: Promise<void>[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly onStopped: () => void) {
    // One waiter per partition of every topic listens on this signal; that is
    // by design, not a leak, so Node's default warning threshold of 10 is off.
    setMaxListeners(0, this.abort.signal);
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  track(consumer: Promise<void>): void {
    // A consumer loop never rejects (handler errors are caught, logging is
    // guarded); the catch only keeps a bug from becoming an unhandled rejection.
    this.consumers.push(consumer.catch(() => undefined));
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort();
      // Each loop ends after its in-flight handler returned.
      await Promise.all(this.consumers);
      this.onStopped();
    })();
    return this.stopping;
  }
}

/** Partition of a key: FNV-1a over its UTF-8 bytes. Stable across runs and processes. */
function partitionOf(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(key, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % partitions;
}
