import type { EventBus, OutgoingEvent, SubscribeOptions, Subscription, TopicLag } from "./types.js";

/** The topics one service declares in its manifest (packages/manifest). */
export interface DeclaredTopics {
  service: string;
  produces: readonly string[];
  consumes: readonly string[];
}

/**
 * A service's view of the bus: only the topics its manifest declares. Using
 * another one is a mistake of the code or of the manifest, and fails at once
 * naming both (a subscription stops the start; a publish rejects, as for a
 * topic that does not exist), instead of the chart, the docs and the other
 * services' expectations silently disagreeing with what the service does.
 */
export class DeclaredTopicsEventBus implements EventBus {
  private readonly produces: ReadonlySet<string>;
  private readonly consumes: ReadonlySet<string>;

  constructor(
    private readonly inner: EventBus,
    private readonly declared: DeclaredTopics,
  ) {
    this.produces = new Set(declared.produces);
    this.consumes = new Set(declared.consumes);
  }

  publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    if (!this.produces.has(topic)) return Promise.reject(this.undeclared(topic, "produces"));
    return this.inner.publish(topic, events);
  }

  subscribe(options: SubscribeOptions): Promise<Subscription> {
    const undeclared = options.topics.find((topic) => !this.consumes.has(topic));
    if (undeclared !== undefined) return Promise.reject(this.undeclared(undeclared, "consumes"));
    return this.inner.subscribe(options);
  }

  ensureTopics(topics: string[]): Promise<void> {
    const undeclared = topics.find((topic) => !this.produces.has(topic) && !this.consumes.has(topic));
    if (undeclared !== undefined) return Promise.reject(this.undeclared(undeclared, "produces or consumes"));
    return this.inner.ensureTopics(topics);
  }

  lag(group: string, topics: string[]): Promise<TopicLag[]> {
    return this.inner.lag(group, topics);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private undeclared(topic: string, list: string): Error {
    return new Error(`the ${this.declared.service} service uses topic ${topic}, which its manifest does not say it ${list} (packages/manifest/src/services.ts)`);
  }
}
