// One partition of a topic, as the in-process bus sees it: an append-only log
// of events with consecutive offsets, trimmed at its head. Two kinds: in
// memory (memory.ts, for unit tests) and in segment files (file-partition.ts,
// the durable default).

import type { OutgoingEvent } from "../types.js";
import type { LoggedEvent } from "./record.js";

export type { LoggedEvent } from "./record.js";

export interface Partition {
  /** Offset of the oldest retained event. */
  readonly start: number;
  /** Offset the next event gets. Every event below it is readable (and, on disk, written). */
  readonly end: number;
  /**
   * Appends events in order. Copies them before returning (the caller may
   * reuse its buffers at once); resolves once they are readable, which for the
   * durable log means written to the log file.
   */
  append(events: OutgoingEvent[]): Promise<void>;
  /** Up to `max` events from offset `from` on (start <= from < end), in order. */
  read(from: number, max: number): Promise<LoggedEvent[]>;
  /** Resolves on the next append, or when `signal` aborts. */
  nextAppend(signal: AbortSignal): Promise<void>;
}

/** Consumers waiting for the next append of one partition. */
export class AppendWaiters {
  private readonly waiters = new Set<() => void>();

  wait(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      if (signal.aborted) return resolve();
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Wakes every waiter on a later turn of the event loop, so that no handler
   * ever runs inside `publish`.
   */
  wake(): void {
    if (this.waiters.size === 0) return;
    const waiters = [...this.waiters];
    this.waiters.clear();
    setImmediate(() => waiters.forEach((wake) => wake()));
  }
}

/** Partition of a key: FNV-1a over its UTF-8 bytes. Stable across runs and processes. */
export function partitionOf(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  // An ASCII key (every id is one) is its own UTF-8: no Buffer per event.
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code >= 0x80) return partitionOfUtf8(key, partitions);
    hash ^= code;
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % partitions;
}

function partitionOfUtf8(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(key, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % partitions;
}
