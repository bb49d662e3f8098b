import { setMaxListeners } from "node:events";
// The embedded event bus: the default when no Kafka is configured (`npm start`,
// a service started alone). It behaves like a small Kafka inside the process:
// per topic a fixed number of partitions chosen by hashing the key, an
// append-only log per partition, and per consumer group a committed position
// per partition.
//
// DURABLE with a directory (`InProcessEventBus.open({ dir })`, what openBus
// does with a dataDir): the logs are segment files and the positions a file
// (log/directory.ts), so a restart, clean or kill -9, delivers every event
// whose `publish` resolved and that a group had not handled yet, in order per
// key. MEMORY ONLY without one (`new InProcessEventBus()`, unit tests): a
// restart loses everything not yet handled.

import {
  type Backoff,
  type BusLogEntry,
  type BusLogger,
  DEFAULT_BACKOFF,
  assertTopicNames,
  backoffDelay,
  batchDelivery,
  errorMessage,
  SHARED_VIEWS,
  sleep,
  stderrLogger,
} from "./shared.js";
import { DirectoryStorage } from "./log/directory.js";
import type { FsyncPolicy } from "./log/file-partition.js";
import { MemoryStorage } from "./log/memory.js";
import { partitionOf, type LoggedEvent, type Partition } from "./log/partition.js";
import { checkEvent } from "./log/record.js";
import type { LogStorage } from "./log/storage.js";
import type {
  EventBatchHandler,
  EventBus,
  OutgoingEvent,
  ReceivedEvent,
  SubscribeOptions,
  Subscription,
  TopicLag,
} from "./types.js";

export interface InProcessEventBusOptions {
  /** Partitions of each topic created; order holds per partition, so per key (default 3, as on Kafka). */
  partitions?: number;
  /**
   * Memory only: about how many events each topic keeps (default 10,000),
   * split evenly over its partitions. A group that falls further behind skips
   * the oldest events, with a warning; a group subscribing later with
   * `fromBeginning` gets what is still retained.
   */
  retention?: number;
  /** Redelivery delay after a handler threw (default 100 ms doubling up to 5 s). */
  backoff?: Backoff;
  /** Where warnings go (failed handlers, skipped events, log recovery); default JSON lines on stderr. */
  logger?: BusLogger;
}

export interface DurableEventBusOptions extends Omit<InProcessEventBusOptions, "retention"> {
  /** The bus' own directory (created if missing), e.g. `$DATA_DIR/bus/embedded`. One process at a time. */
  dir: string;
  /**
   * When `publish` resolves. "interval" (default): once the events are written
   * to the log file, i.e. handed to the OS: they survive any crash of the
   * process (kill -9 included) but a power loss or kernel crash can lose what
   * was written in the last `fsyncIntervalMs`. "always": once they are also
   * fsynced (publishes waiting together share one fsync).
   */
  fsync?: FsyncPolicy;
  /** Period of the fsync of "interval" (default 1,000 ms). */
  fsyncIntervalMs?: number;
  /**
   * Group positions are written at most this long after they move (default
   * 100 ms), when a subscription stops and on close. After a crash a group
   * gets again what it handled in that window; after a clean stop, nothing.
   */
  commitIntervalMs?: number;
  /** Size at which a segment file is closed and the next begun (default 8 MiB). */
  segmentBytes?: number;
  /**
   * Age of its first event at which the active segment is closed (default 1
   * hour), so that retention can delete it once every group has passed it:
   * handled events never wait for a quiet partition to fill `segmentBytes`.
   * (A segment every group has handled is closed at the next retention pass
   * anyway.)
   */
  segmentMaxAgeMs?: number;
  /**
   * Most bytes a topic keeps (default 256 MiB, split over its partitions).
   * Segments every group has passed go first; beyond this size the oldest go
   * even if a group has not handled them, with a warning.
   */
  retentionBytes?: number;
  /**
   * Longest an event is kept (default 7 days, as Kafka's retention.ms): a
   * segment whose last event is older is deleted even if a group has not
   * handled it, with a warning.
   */
  retentionMs?: number;
  /** A group without a subscription that has not consumed for this long is forgotten (default 7 days). */
  groupRetentionMs?: number;
  /** How often retention runs besides after each new segment (default 30 s). */
  retentionCheckMs?: number;
  /** How long to wait for another process holding the directory before refusing (default 10 s; see @emailsvc/dir-lock). */
  lockWaitMs?: number;
}

export const DURABLE_DEFAULTS = {
  fsync: "interval" as FsyncPolicy,
  fsyncIntervalMs: 1_000,
  commitIntervalMs: 100,
  segmentBytes: 8 * 1024 * 1024,
  segmentMaxAgeMs: 60 * 60 * 1000,
  retentionBytes: 256 * 1024 * 1024,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  groupRetentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionCheckMs: 30_000,
};

/** Events a consumer reads from its partition at a time. */
const READ_BATCH = 256;

export class InProcessEventBus implements EventBus {
  private readonly partitions: number;
  private readonly backoff: Backoff;
  private readonly log: BusLogger;
  private readonly storage: LogStorage;

  /** group -> topics it consumes right now (one consumer per group and topic). */
  private readonly active = new Map<string, Set<string>>();
  private readonly subscriptions = new Set<InProcessSubscription>();
  private closing: Promise<void> | undefined;

  /** A memory-only bus (unit tests). Use `InProcessEventBus.open({ dir })` for the durable one. */
  constructor(options: InProcessEventBusOptions = {}, storage?: LogStorage) {
    this.partitions = options.partitions ?? 3;
    if (!Number.isInteger(this.partitions) || this.partitions < 1) {
      throw new RangeError("partitions must be a positive integer");
    }
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.log = options.logger ?? stderrLogger;
    if (storage) {
      this.storage = storage;
    } else {
      const retention = options.retention ?? 10_000;
      if (!Number.isInteger(retention) || retention < 1) {
        throw new RangeError("retention must be a positive integer");
      }
      this.storage = new MemoryStorage(Math.ceil(retention / this.partitions));
    }
  }

  /**
   * Opens the durable bus in `dir`: recovers its logs (dropping a record torn
   * by a crash, with a warning) and its groups' positions. Rejects when another
   * process (or another bus of this one) has the directory open.
   */
  static async open(options: DurableEventBusOptions): Promise<InProcessEventBus> {
    const settings = { ...DURABLE_DEFAULTS, ...definedOnly(options) };
    for (const name of ["fsyncIntervalMs", "commitIntervalMs", "segmentBytes", "segmentMaxAgeMs", "retentionBytes", "retentionMs", "groupRetentionMs", "retentionCheckMs"] as const) {
      if (!Number.isInteger(settings[name]) || settings[name] < 1) throw new RangeError(`${name} must be a positive integer`);
    }
    if (settings.fsync !== "interval" && settings.fsync !== "always") throw new RangeError('fsync must be "interval" or "always"');
    const logger = options.logger ?? stderrLogger;
    let bus: InProcessEventBus | undefined;
    const storage = await DirectoryStorage.open({
      dir: options.dir,
      fsync: settings.fsync,
      fsyncIntervalMs: settings.fsyncIntervalMs,
      commitIntervalMs: settings.commitIntervalMs,
      segmentBytes: settings.segmentBytes,
      segmentMaxAgeMs: settings.segmentMaxAgeMs,
      retentionBytes: settings.retentionBytes,
      retentionMs: settings.retentionMs,
      groupRetentionMs: settings.groupRetentionMs,
      retentionCheckMs: settings.retentionCheckMs,
      ...(options.lockWaitMs !== undefined ? { lockWaitMs: options.lockWaitMs } : {}),
      warn: (message, fields) => warnSafely(logger, message, fields),
      isActive: (group) => (bus?.active.get(group)?.size ?? 0) > 0,
    });
    try {
      bus = new InProcessEventBus(options, storage);
    } catch (error) {
      await storage.close();
      throw error;
    }
    return bus;
  }

  async ensureTopics(topics: string[]): Promise<void> {
    this.assertOpen();
    assertTopicNames(topics);
    for (const topic of topics) await this.storage.createTopic(topic, this.partitions);
  }

  async publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    this.assertOpen();
    if (events.length === 0) return;
    const partitions = this.topicLog(topic);
    // Validate the whole batch before appending any of it: all or nothing.
    events.forEach(checkEvent);
    const byPartition = new Map<Partition, OutgoingEvent[]>();
    for (const event of events) {
      const partition = partitions[partitionOf(event.key, partitions.length)]!;
      const list = byPartition.get(partition);
      if (list) list.push(event);
      else byPartition.set(partition, [event]);
    }
    // Each append copies its events before returning, so the caller may reuse its buffers.
    await Promise.all([...byPartition].map(([partition, list]) => partition.append(list)));
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    this.assertOpen();
    const { group } = options;
    const topics = [...new Set(options.topics)];
    if (!group) throw new Error("subscribe needs a group");
    if (topics.length === 0) throw new Error("subscribe needs at least one topic");
    const { deliver, max } = batchDelivery(options);
    const sharedViews = (options as { [SHARED_VIEWS]?: boolean })[SHARED_VIEWS] === true;
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
    // `subscribe` resolves is delivered, even with fromBeginning false; and
    // commit them, so that a restart keeps them.
    const groups = this.storage.groups;
    const groupPositions = groups.get(group) ?? new Map<string, number[]>();
    groups.set(group, groupPositions);
    const fromBeginning = options.fromBeginning ?? true;
    const positions = topics.map((topic, i) => {
      let known = groupPositions.get(topic);
      if (!known) {
        known = logs[i]!.map((log) => (fromBeginning ? log.start : log.end));
        groupPositions.set(topic, known);
      }
      return known;
    });
    this.storage.positionsChanged(group);

    const subscription = new InProcessSubscription(async () => {
      topics.forEach((topic) => activeTopics.delete(topic));
      this.subscriptions.delete(subscription);
      // What was handled stays handled across a restart.
      await this.storage.commit().catch((error: unknown) => this.warn("committing group positions failed", { group, error: errorMessage(error) }));
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
            deliver,
            max,
            sharedViews,
            signal: subscription.signal,
          }),
        );
      });
    });
    return subscription;
  }

  async lag(group: string, topics: string[]): Promise<TopicLag[]> {
    const positions = this.storage.groups.get(group);
    return topics.flatMap((topic) => {
      const partitions = this.storage.topics.get(topic);
      if (!partitions) return [];
      const known = positions?.get(topic);
      const lag = partitions.reduce((sum, p, i) => sum + Math.max(0, p.end - Math.max(p.start, known?.[i] ?? p.start)), 0);
      return [{ topic, lag }];
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((s) => s.stop()));
      await this.storage.close();
    })();
    return this.closing;
  }

  /**
   * Delivers one partition of one topic to one group, in order: the next
   * events (up to `max`, from what was read ahead) only after the handler
   * succeeded on the current ones; a failure retries the same events after a
   * backoff.
   */
  private async consume(c: {
    group: string;
    topic: string;
    partition: number;
    log: Partition;
    positions: number[];
    deliver: EventBatchHandler;
    max: number;
    /** The handler takes the log's views (SHARED_VIEWS): no copy per delivery. */
    sharedViews: boolean;
    signal: AbortSignal;
  }): Promise<void> {
    const { group, topic, partition, log, positions, signal } = c;
    // Never start a handler inside `subscribe` itself.
    await new Promise((resolve) => setImmediate(resolve));
    let failures = 0;
    /** Events read ahead from the log, from `positions[partition]` on. */
    let batch: LoggedEvent[] = [];
    let next = 0;
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
        this.storage.positionsChanged(group);
      }
      if (offset >= log.end) {
        await log.nextAppend(signal);
        continue;
      }
      if (batch[next]?.offset !== offset) {
        try {
          batch = await log.read(offset, READ_BATCH);
          next = 0;
        } catch (error) {
          // Not a handler's fault: a disk problem, or a segment deleted under the read (then the next turn skips ahead).
          const delay = backoffDelay(this.backoff, failures++);
          this.warn("reading the log failed; trying again after a backoff", { group, topic, partition, offset, delay_ms: delay, error: errorMessage(error) });
          await sleep(delay, signal);
          continue;
        }
        if (batch[0]?.offset !== offset || signal.aborted) continue;
      }
      const taken = batch.slice(next, next + c.max);
      try {
        await c.deliver(
          taken.map((stored) =>
            c.sharedViews
              ? ({ topic, key: stored.key, value: stored.value, headers: stored.headers } satisfies ReceivedEvent)
              : ({
                  topic,
                  key: stored.key,
                  // A fresh copy per attempt: a failed attempt may have changed the last one.
                  value: stored.value.slice(),
                  headers: { ...stored.headers },
                } satisfies ReceivedEvent),
          ),
        );
        positions[partition] = offset + taken.length; // committed to disk within commitIntervalMs
        this.storage.positionsChanged(group);
        next += taken.length;
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
    warnSafely(this.log, message, fields);
  }

  private topicLog(topic: string): Partition[] {
    const partitions = this.storage.topics.get(topic);
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

  constructor(private readonly onStopped: () => Promise<void>) {
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
      await this.onStopped();
    })();
    return this.stopping;
  }
}

function warnSafely(logger: BusLogger, message: string, fields: BusLogEntry["fields"]): void {
  try {
    logger({ level: "warn", namespace: "in-process", message, fields });
  } catch {
    // ignored on purpose
  }
}

/** The options that were given a value (so that `{ fsync: undefined }` keeps the default). */
function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
