// Small pieces both adapters share: the logger callback, the redelivery
// backoff, an abortable sleep, the topic-name rule and the batch delivery.

import type { EventBatchHandler, EventHandler, SubscribeOptions } from "./types.js";

/** One warning or error from a bus. Never carries an event's value or headers. */
export interface BusLogEntry {
  level: "warn" | "error";
  /** Where it came from, e.g. `in-process` or kafkajs' `Consumer`, `Producer`. */
  namespace: string;
  message: string;
  /** Ids only: group, topic, partition, offset, retry counts, an error message. */
  fields: Record<string, string | number | boolean>;
}

/**
 * Receives the bus' warnings and errors. Services pass a function that forwards
 * to their own logger, e.g. `(e) => log[e.level]({ ...e.fields, ns: e.namespace }, e.message)`.
 */
export type BusLogger = (entry: BusLogEntry) => void;

/** Default logger: one JSON line per entry on stderr, shaped like our pino lines. */
export const stderrLogger: BusLogger = (entry) => {
  process.stderr.write(
    JSON.stringify({
      level: entry.level,
      time: new Date().toISOString(),
      component: "events",
      namespace: entry.namespace,
      ...entry.fields,
      msg: entry.message,
    }) + "\n",
  );
};

/** Redelivery backoff after a failed handler: exponential, capped. */
export interface Backoff {
  /** Delay before the first redelivery, in ms (default 100). */
  initialMs: number;
  /** Upper bound of any delay, in ms (default 5000). */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 100, maxMs: 5000 };

/** Delay before redelivery number `attempt` (0 for the first redelivery). */
export function backoffDelay(backoff: Backoff, attempt: number): number {
  // 2^attempt overflows to Infinity for huge attempts; Math.min keeps it capped.
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** attempt);
}

/** The message of an unknown thrown value, for logs. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Kafka's rule for topic names (it also refuses "." and ".."); the in-process
 * bus applies it too, so a bad name fails in tests, and it keeps a topic name
 * a safe directory name for the durable bus.
 */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

export function isTopicName(topic: string): boolean {
  return TOPIC_NAME.test(topic) && topic !== "." && topic !== "..";
}

export function assertTopicNames(topics: string[]): void {
  for (const topic of topics) {
    if (!isTopicName(topic)) {
      throw new Error(`invalid topic name "${topic}": use 1-249 of [a-zA-Z0-9._-], not "." or ".."`);
    }
  }
}

/**
 * A subscription option of the in-process bus, for its own port (port-bus.ts)
 * only: the handler copies what it needs before its first await and changes
 * nothing, so the bus may hand it the log's own views of each event rather
 * than a copy of the value and headers per delivery. Other buses ignore it.
 */
export const SHARED_VIEWS = Symbol("events.sharedViews");

/** Most events one batch handler call may take (SubscribeOptions.maxBatch). */
export const MAX_BATCH_EVENTS = 10_000;

/**
 * A subscription's handler as both adapters run it: batches of at most `max`
 * events (1 for a per-event handler). Checks that exactly one kind was given.
 */
export function batchDelivery(options: SubscribeOptions): { deliver: EventBatchHandler; max: number } {
  const { handler, batchHandler } = options as { handler?: EventHandler; batchHandler?: EventBatchHandler; maxBatch?: number };
  if ((handler === undefined) === (batchHandler === undefined)) throw new Error("subscribe needs either handler or batchHandler");
  if (handler !== undefined) return { deliver: (events) => handler(events[0]!), max: 1 };
  const max = (options as { maxBatch?: number }).maxBatch;
  if (!Number.isInteger(max) || max! < 1 || max! > MAX_BATCH_EVENTS) {
    throw new RangeError(`maxBatch must be an integer from 1 to ${MAX_BATCH_EVENTS}, got ${String(max)}`);
  }
  return { deliver: batchHandler!, max: max! };
}
