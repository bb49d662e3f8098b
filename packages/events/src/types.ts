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

export interface SubscribeOptions {
  /** Consumer group, one per service (its name): each group gets every event once. */
  group: string;
  topics: string[];
  /**
   * Called once per event, in order per key. When it throws, the same event is
   * delivered again after a backoff; nothing after it in its partition is
   * delivered before it succeeds.
   */
  handler: EventHandler;
  /** Start from the earliest retained event when the group is new (default true). */
  fromBeginning?: boolean;
}

export interface Subscription {
  /** Stops taking new events and resolves once the in-flight handler finished. */
  stop(): Promise<void>;
}

export interface EventBus {
  /** Resolves only once the bus has durably taken every message (acks=all on Kafka). */
  publish(topic: string, events: OutgoingEvent[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /** Creates topics ahead of use where the backend needs it; idempotent. */
  ensureTopics(topics: string[]): Promise<void>;
  /** Stops every subscription (draining in-flight handlers), then disconnects. */
  close(): Promise<void>;
}
