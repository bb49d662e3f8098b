import type { EventBus, OutgoingEvent, ReceivedEvent, SubscribeOptions, Subscription, TopicLag } from "./types.js";

/**
 * A bus whose topics and consumer groups carry a prefix on the wire
 * (`KAFKA_NAMESPACE`): several installations (staging and production, or
 * test runs side by side) share one Kafka cluster without seeing each
 * other's events or taking each other's partitions. The services see the
 * plain names.
 */
export class NamespacedEventBus implements EventBus {
  private readonly prefix: string;

  constructor(
    private readonly inner: EventBus,
    namespace: string,
  ) {
    if (!/^[A-Za-z0-9_-]{1,60}$/.test(namespace)) throw new Error(`KAFKA_NAMESPACE must be 1-60 of [A-Za-z0-9_-], got "${namespace}"`);
    this.prefix = `${namespace}.`;
  }

  publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    return this.inner.publish(this.prefix + topic, events);
  }

  subscribe(options: SubscribeOptions): Promise<Subscription> {
    const strip = (event: ReceivedEvent): ReceivedEvent => ({ ...event, topic: event.topic.slice(this.prefix.length) });
    const base = {
      group: this.prefix + options.group,
      topics: options.topics.map((t) => this.prefix + t),
      ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
      ...(options.gatherMs !== undefined ? { gatherMs: options.gatherMs } : {}),
    };
    if (options.batchHandler) {
      const batchHandler = options.batchHandler;
      return this.inner.subscribe({ ...base, maxBatch: options.maxBatch, batchHandler: (events) => batchHandler(events.map(strip)) });
    }
    const handler = options.handler;
    return this.inner.subscribe({ ...base, handler: (event) => handler(strip(event)) });
  }

  ensureTopics(topics: string[]): Promise<void> {
    return this.inner.ensureTopics(topics.map((t) => this.prefix + t));
  }

  async lag(group: string, topics: string[]): Promise<TopicLag[]> {
    const lags = await this.inner.lag(this.prefix + group, topics.map((t) => this.prefix + t));
    return lags.map((l) => ({ ...l, topic: l.topic.slice(this.prefix.length) }));
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
