import type { EventBus } from "@emailsvc/events";
import { SubscriberService, TagService } from "@emailsvc/proto";
import { startServiceServer, type Logger } from "@emailsvc/runtime";
import type { DocumentStore } from "@emailsvc/storage";
import { OutboxRelay, SUBSCRIBER_TOPICS } from "./messaging/outbox-relay.js";
import { subscriberRoutes } from "./rpc/services.js";
import {
  AUDIT_INDEXES,
  SUBSCRIBER_INDEXES,
  TAG_INDEXES,
  type AuditDoc,
  type SubscriberDoc,
  type TagDoc,
} from "./storage/documents.js";
import type { Deps } from "./usecases/deps.js";

export interface SubscribersServiceOptions {
  store: DocumentStore;
  bus: EventBus;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** Outbox sweep period; tests shorten it. */
  sweepIntervalMs?: number;
  sweepGraceMs?: number;
}

export interface RunningSubscribersService {
  url: string;
  port: number;
  relay: OutboxRelay;
  /** Drains: NOT_SERVING, in-flight calls finish, relay stops. Store and bus stay open (the caller owns them). */
  close(): Promise<void>;
}

export async function startSubscribersService(options: SubscribersServiceOptions): Promise<RunningSubscribersService> {
  const { store, bus, logger } = options;
  const subscribers = store.collection<SubscriberDoc>("subscribers");
  const tags = store.collection<TagDoc>("tags");
  const audit = store.collection<AuditDoc>("subscriber_events");
  await Promise.all([
    subscribers.createIndexes(SUBSCRIBER_INDEXES),
    tags.createIndexes(TAG_INDEXES),
    audit.createIndexes(AUDIT_INDEXES),
    bus.ensureTopics([...SUBSCRIBER_TOPICS]),
  ]);

  const relay = new OutboxRelay({
    subscribers,
    audit,
    bus,
    logger,
    ...(options.sweepIntervalMs !== undefined ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
    ...(options.sweepGraceMs !== undefined ? { sweepGraceMs: options.sweepGraceMs } : {}),
  });
  const deps: Deps = { subscribers, tags, audit, relay, logger, now: Date.now };
  const { server, health } = await startServiceServer({
    services: [SubscriberService, TagService],
    routes: subscriberRoutes(deps),
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  relay.start();
  logger.info({ url: server.url }, "subscribers service listening");

  return {
    url: server.url,
    port: server.port,
    relay,
    async close() {
      health.setDraining();
      await server.close();
      await relay.stop();
    },
  };
}
