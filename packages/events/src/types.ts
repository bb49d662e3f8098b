// The event-bus port: Kafka in production, an in-process bus by default.
// Delivery is at least once; every handler must be idempotent.

export interface OutgoingEvent {
  /** Partitioning key: events with one key are delivered in order. */
  key: string;
  /** Protobuf-encoded event message. Never holds personal data. */
  value: Uint8Array;
  headers?: Record<string, string>;
}

export interface ReceivedEvent {
  topic: string;
  key: string;
  value: Uint8Array;
  headers: Record<string, string>;
}

export type EventHandler = (event: ReceivedEvent) => Promise<void>;
/** Consecutive events of one partition of one topic, in order. */
export type EventBatchHandler = (events: ReceivedEvent[]) => Promise<void>;

/**
 * How a subscription hands events over: one at a time (`handler`), or in
 * batches (`batchHandler`, for fan-outs that write many records at once).
 */
export type SubscribeOptions = SubscribeOptionsBase &
  (
    | {
        /**
         * Called once per event, in order per key. When it throws, the same event is
         * delivered again after a backoff; nothing after it in its partition is
         * delivered before it succeeds.
         */
        handler: EventHandler;
        batchHandler?: never;
      }
    | {
        /**
         * Called with up to `maxBatch` consecutive events of one partition of one
         * topic, in order (fewer when fewer are waiting: a lone event is not held
         * back). When it throws, the same events are delivered again after a
         * backoff, possibly in a batch cut differently; nothing after them in
         * their partition is delivered before they succeed.
         */
        batchHandler: EventBatchHandler;
        /** Most events one call gets, 1 to 10,000. */
        maxBatch: number;
        handler?: never;
      }
  );

interface SubscribeOptionsBase {
  /** Consumer group, one per service (its name): each group gets every event once. */
  group: string;
  topics: string[];
  /**
   * Where a group that has no committed position yet starts: at the earliest
   * retained event (true, the default) or at the end of the log (false). A group
   * that already consumed the topic resumes after its last handled event.
   */
  fromBeginning?: boolean;
  /**
   * Kafka: how long a fetch may wait for more events (up to 64 KiB) before
   * handing over what it has, in ms, at most 1,000 (default 0: at once). For
   * a consumer whose cost is per batch more than per event (a write per
   * batch) and that can take a short delay; fewer, larger batches. The
   * in-process bus hands events over at once whatever this says.
   */
  gatherMs?: number;
}

export interface Subscription {
  /**
   * Stops taking new events and resolves once the in-flight handler finished.
   * Idempotent. Do not await it from inside the handler itself (it would wait
   * for itself).
   */
  stop(): Promise<void>;
}

export interface EventBus {
  /**
   * Resolves only once the bus has durably taken every message (acks=all on
   * Kafka). All events of one call go out as one batch. An empty list is a
   * no-op. Rejects for a topic that does not exist (see `ensureTopics`) and
   * once the bus is closed.
   */
  publish(topic: string, events: OutgoingEvent[]): Promise<void>;
  /**
   * Resolves once the consumer has joined its group and its start position is
   * fixed: any event published after that is delivered to it. Rejects for a
   * topic that does not exist and once the bus is closed.
   */
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /**
   * Creates the topics that do not exist yet; idempotent. Both adapters refuse
   * to publish to or subscribe to a topic that was never created, so every
   * service ensures the topics it produces and consumes at start-up.
   */
  ensureTopics(topics: string[]): Promise<void>;
  /**
   * How many events of each topic `group` has not handled yet (summed over
   * partitions; a group that never consumed a topic counts from its start).
   * For the consumer-lag metric; ids and counts only.
   */
  lag(group: string, topics: string[]): Promise<TopicLag[]>;
  /** Stops every subscription (draining in-flight handlers), then disconnects. Idempotent. */
  close(): Promise<void>;
}

export interface TopicLag {
  topic: string;
  lag: number;
}
