// The memory-only log: what unit tests use (no directory). A restart loses it.

import type { OutgoingEvent } from "../types.js";
import { AppendWaiters, type LoggedEvent, type Partition } from "./partition.js";
import type { GroupPositions, LogStorage } from "./storage.js";

/** One partition in memory, keeping at most `capacity` events: the oldest go first. */
export class MemoryPartition implements Partition {
  /** Offset of `entries[0]`; grows as old entries are trimmed. */
  private base = 0;
  private readonly entries: LoggedEvent[] = [];
  private readonly waiters = new AppendWaiters();

  constructor(private readonly capacity: number) {}

  get start(): number {
    return this.base;
  }

  get end(): number {
    return this.base + this.entries.length;
  }

  async append(events: OutgoingEvent[]): Promise<void> {
    for (const event of events) {
      // Copies, so that the publisher reusing its buffers cannot change the log.
      this.entries.push({ offset: this.end, key: event.key, value: event.value.slice(), headers: { ...event.headers } });
    }
    const excess = this.entries.length - this.capacity;
    if (excess > 0) {
      this.entries.splice(0, excess);
      this.base += excess;
    }
    this.waiters.wake();
  }

  async read(from: number, max: number): Promise<LoggedEvent[]> {
    const first = Math.max(from, this.base) - this.base;
    return this.entries.slice(first, first + max);
  }

  nextAppend(signal: AbortSignal): Promise<void> {
    return this.waiters.wait(signal);
  }
}

export class MemoryStorage implements LogStorage {
  readonly topics = new Map<string, Partition[]>();
  readonly groups: GroupPositions = new Map();

  /** @param capacity events kept per partition */
  constructor(private readonly capacity: number) {}

  async createTopic(topic: string, partitions: number): Promise<Partition[]> {
    let created = this.topics.get(topic);
    if (!created) {
      created = Array.from({ length: partitions }, () => new MemoryPartition(this.capacity));
      this.topics.set(topic, created);
    }
    return created;
  }

  positionsChanged(): void {}

  async commit(): Promise<void> {}

  async close(): Promise<void> {}
}
