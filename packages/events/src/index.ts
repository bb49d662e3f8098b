// @emailsvc/events: the event-bus port and its two adapters.
//
//   const bus = await openBus({ brokers: process.env.KAFKA_BROKERS, clientId: "delivery", dataDir: "./data" });
//   await bus.ensureTopics(["email.send.requested"]);
//   await bus.subscribe({ group: "delivery", topics: ["email.send.requested"], handler });

import * as path from "node:path";
import { DURABLE_DEFAULTS, InProcessEventBus } from "./in-process.js";
import type { FsyncPolicy } from "./log/file-partition.js";
import { KafkaEventBus } from "./kafka.js";
import type { BusLogger } from "./shared.js";
import type { EventBus } from "./types.js";

export type {
  EventBatchHandler,
  EventBus,
  EventHandler,
  OutgoingEvent,
  ReceivedEvent,
  SubscribeOptions,
  Subscription,
  TopicLag,
} from "./types.js";
export type { Backoff, BusLogEntry, BusLogger } from "./shared.js";
export { MAX_BATCH_EVENTS } from "./shared.js";
export {
  DURABLE_DEFAULTS,
  InProcessEventBus,
  type DurableEventBusOptions,
  type InProcessEventBusOptions,
} from "./in-process.js";
export type { FsyncPolicy } from "./log/file-partition.js";
export { KafkaEventBus, type KafkaEventBusConfig } from "./kafka.js";
export { messageCodec, type MessageCodec } from "./codec/index.js";
export {
  TOPICS,
  decodeEvent,
  emailOutcomeId,
  emailOutcomesOf,
  eventTenant,
  encodeEvent,
  eventHeaders,
  isTopic,
  publishEvents,
  subscribeEventBatches,
  subscribeEvents,
  withTraceparent,
  type DecodedBatchEvent,
  type DecodedEvent,
  type EmailOutcome,
  type EncodedEvent,
  type EventBody,
  type EventLogger,
  type EventMessage,
  type EventOrigin,
  type ReceivedMeta,
  type SubscribeEventBatchesOptions,
  type TopicBatchHandler,
  type TopicBatchHandlers,
  type SubscribeEventsOptions,
  type Topic,
  type TopicHandler,
  type TopicHandlers,
  type TopicSpec,
} from "./registry.js";
import { NamespacedEventBus } from "./namespaced.js";
export { NamespacedEventBus } from "./namespaced.js";
export { DeclaredTopicsEventBus, type DeclaredTopics } from "./declared.js";

export interface OpenBusOptions {
  /** Comma-separated `host:port` list (`KAFKA_BROKERS`). Unset or blank: the in-process bus. */
  brokers?: string | undefined;
  /**
   * Who opens the bus, e.g. the service name or `embedded`: the Kafka client id,
   * and the in-process bus' folder under `dataDir`.
   */
  clientId: string;
  /**
   * DATA_DIR. Without brokers the in-process bus keeps its log in
   * `<dataDir>/bus/<clientId>`, durable across restarts (one process per
   * folder). Unset: memory only, which a restart loses (unit tests).
   */
  dataDir?: string | undefined;
  /** In-process bus with a dataDir: when `publish` resolves (see DurableEventBusOptions.fsync; default "interval"). */
  fsync?: FsyncPolicy | undefined;
  /**
   * Longest an event is kept, handled or not (`EVENT_RETENTION_SECONDS`):
   * the in-process bus deletes older segments (default 7 days;
   * DurableEventBusOptions.retentionMs), and topics created on Kafka get it as
   * `retention.ms` (unset: the broker's default).
   */
  retentionMs?: number | undefined;
  /**
   * In-process bus with a dataDir: how often events every group has handled
   * are looked for and deleted (`BUS_RETENTION_CHECK_SECONDS`, default 30 s).
   */
  retentionCheckMs?: number | undefined;
  /** Where the bus' warnings and errors go; default JSON lines on stderr. */
  logger?: BusLogger;
  /** Partitions of topics this bus creates (`KAFKA_TOPIC_PARTITIONS`, default 3). */
  topicPartitions?: number | undefined;
  /** Replication factor of topics this bus creates (`KAFKA_REPLICATION_FACTOR`, default 1; use 3 in production). */
  replicationFactor?: number | undefined;
  /** Prefix of topics and consumer groups on the cluster (`KAFKA_NAMESPACE`; see NamespacedEventBus). Unset: none. */
  namespace?: string | undefined;
  /** Kafka: pack a publish's events of a partition into one record (`KAFKA_PACK_EVENTS`, default on; see KafkaEventBusConfig.packEvents). */
  packEvents?: boolean | undefined;
}

/** An on/off setting from the environment; unset or blank: undefined. */
function switchFromEnv(name: string, env: Record<string, string | undefined> = process.env): boolean | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  if (raw === "on") return true;
  if (raw === "off") return false;
  throw new Error(`environment variable ${name} must be "on" or "off", got "${raw}"`);
}

function positiveIntFromEnv(name: string, env: Record<string, string | undefined> = process.env): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`environment variable ${name} must be a positive integer, got "${raw}"`);
  return value;
}

/** A duration in whole seconds from the environment, in ms. */
function secondsFromEnv(name: string, env: Record<string, string | undefined> = process.env): number | undefined {
  const seconds = positiveIntFromEnv(name, env);
  return seconds === undefined ? undefined : seconds * 1000;
}

/**
 * The event log's retention settings from an environment
 * (`EVENT_RETENTION_SECONDS`, `BUS_RETENTION_CHECK_SECONDS`), for a launcher
 * whose settings are not the process's own (openBus reads process.env).
 */
export function busRetentionFromEnv(env: Record<string, string | undefined>): Pick<OpenBusOptions, "retentionMs" | "retentionCheckMs"> {
  const retentionMs = secondsFromEnv("EVENT_RETENTION_SECONDS", env);
  const retentionCheckMs = secondsFromEnv("BUS_RETENTION_CHECK_SECONDS", env);
  return { ...(retentionMs !== undefined ? { retentionMs } : {}), ...(retentionCheckMs !== undefined ? { retentionCheckMs } : {}) };
}

/**
 * Kafka when brokers are given, else the in-process bus: durable in
 * `<dataDir>/bus/<clientId>` when a dataDir is given, memory only without.
 */
export async function openBus(options: OpenBusOptions): Promise<EventBus> {
  const brokers = (options.brokers ?? "")
    .split(",")
    .map((broker) => broker.trim())
    .filter((broker) => broker.length > 0);
  const logger = options.logger ? { logger: options.logger } : {};
  const retentionMs = options.retentionMs ?? secondsFromEnv("EVENT_RETENTION_SECONDS");
  if (brokers.length > 0) {
    const topicPartitions = options.topicPartitions ?? positiveIntFromEnv("KAFKA_TOPIC_PARTITIONS");
    const replicationFactor = options.replicationFactor ?? positiveIntFromEnv("KAFKA_REPLICATION_FACTOR");
    const packEvents = options.packEvents ?? switchFromEnv("KAFKA_PACK_EVENTS");
    const kafka = new KafkaEventBus({
      brokers,
      clientId: options.clientId,
      ...logger,
      ...(topicPartitions !== undefined ? { topicPartitions } : {}),
      ...(replicationFactor !== undefined ? { replicationFactor } : {}),
      ...(packEvents !== undefined ? { packEvents } : {}),
      // The same default as the in-process bus: topics the services create keep events 7 days, not the broker's default.
      topicRetentionMs: retentionMs ?? DURABLE_DEFAULTS.retentionMs,
    });
    const namespace = options.namespace ?? (process.env.KAFKA_NAMESPACE || undefined);
    return namespace ? new NamespacedEventBus(kafka, namespace) : kafka;
  }
  if (options.dataDir === undefined) return new InProcessEventBus(logger);
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(options.clientId)) {
    throw new Error(`clientId "${options.clientId}" names the bus folder: use [A-Za-z0-9._-], not starting with "."`);
  }
  const retentionCheckMs = options.retentionCheckMs ?? secondsFromEnv("BUS_RETENTION_CHECK_SECONDS");
  return InProcessEventBus.open({
    dir: busDir(options.dataDir, options.clientId),
    ...logger,
    ...(options.fsync ? { fsync: options.fsync } : {}),
    ...(retentionMs !== undefined ? { retentionMs } : {}),
    ...(retentionCheckMs !== undefined ? { retentionCheckMs } : {}),
  });
}

/** Where the in-process bus of `clientId` keeps its log under DATA_DIR. */
export function busDir(dataDir: string, clientId: string): string {
  return path.join(dataDir, "bus", clientId);
}
export { exposeBus, PortEventBus } from "./port-bus.js";
