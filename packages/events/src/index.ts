// @emailsvc/events: the event-bus port and its two adapters.
//
//   const bus = openBus({ brokers: process.env.KAFKA_BROKERS, clientId: "delivery" });
//   await bus.ensureTopics(["email.send.requested"]);
//   await bus.subscribe({ group: "delivery", topics: ["email.send.requested"], handler });

import { InProcessEventBus } from "./in-process.js";
import { KafkaEventBus } from "./kafka.js";
import type { BusLogger } from "./shared.js";
import type { EventBus } from "./types.js";

export type {
  EventBus,
  EventHandler,
  OutgoingEvent,
  ReceivedEvent,
  SubscribeOptions,
  Subscription,
} from "./types.js";
export type { Backoff, BusLogEntry, BusLogger } from "./shared.js";
export { InProcessEventBus, type InProcessEventBusOptions } from "./in-process.js";
export { KafkaEventBus, type KafkaEventBusConfig } from "./kafka.js";

export interface OpenBusOptions {
  /** Comma-separated `host:port` list (`KAFKA_BROKERS`). Unset or blank: the in-process bus. */
  brokers?: string | undefined;
  /** Kafka client id, e.g. the service name. */
  clientId: string;
  /** Where the bus' warnings and errors go; default JSON lines on stderr. */
  logger?: BusLogger;
  /** Partitions of topics this bus creates (`KAFKA_TOPIC_PARTITIONS`, default 3). */
  topicPartitions?: number | undefined;
  /** Replication factor of topics this bus creates (`KAFKA_REPLICATION_FACTOR`, default 1; use 3 in production). */
  replicationFactor?: number | undefined;
}

function positiveIntFromEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`environment variable ${name} must be a positive integer, got "${raw}"`);
  return value;
}

/** Kafka when brokers are given, else the embedded in-process bus. */
export function openBus(options: OpenBusOptions): EventBus {
  const brokers = (options.brokers ?? "")
    .split(",")
    .map((broker) => broker.trim())
    .filter((broker) => broker.length > 0);
  const logger = options.logger ? { logger: options.logger } : {};
  if (brokers.length > 0) {
    const topicPartitions = options.topicPartitions ?? positiveIntFromEnv("KAFKA_TOPIC_PARTITIONS");
    const replicationFactor = options.replicationFactor ?? positiveIntFromEnv("KAFKA_REPLICATION_FACTOR");
    return new KafkaEventBus({
      brokers,
      clientId: options.clientId,
      ...logger,
      ...(topicPartitions !== undefined ? { topicPartitions } : {}),
      ...(replicationFactor !== undefined ? { replicationFactor } : {}),
    });
  }
  return new InProcessEventBus(logger);
}
