import type { EventBus } from "@emailsvc/events";
import type { Outbox } from "@emailsvc/outbox";
import { SubscriberService, TagService } from "@emailsvc/proto";
import { startServiceServer, tenantKey, type CallContext, type Logger } from "@emailsvc/runtime";
import type { DocumentStore } from "@emailsvc/storage";
import { SUBSCRIBER_TOPICS, subscriberOutbox } from "./messaging/outbox.js";
import { subscriberRoutes } from "./rpc/services.js";
import type { SubscriberDoc } from "./storage/documents.js";
import { COLLECTIONS } from "./storage/repositories.js";
import type { Deps, Scope } from "./usecases/deps.js";

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
  /** The outbox: its backlog, and the sweep (tests call it). */
  outbox: Outbox<SubscriberDoc>;
  /** Drains: NOT_SERVING, in-flight calls finish, the outbox stops. Store and bus stay open (the caller owns them). */
  close(): Promise<void>;
}

export async function startSubscribersService(options: SubscribersServiceOptions): Promise<RunningSubscribersService> {
  const { store, bus, logger } = options;
  const [collections] = await Promise.all([COLLECTIONS.open(store), bus.ensureTopics([...SUBSCRIBER_TOPICS])]);
  const outbox = subscriberOutbox(collections, bus, logger, { sweepIntervalMs: options.sweepIntervalMs, sweepGraceMs: options.sweepGraceMs });
  const deps: Deps = { outbox, logger, now: Date.now };
  // The tenant of a call comes from its authenticated headers; the use case
  // gets that tenant's repositories and nothing else.
  const scopeOf = (call: CallContext): Scope => ({ call, ...COLLECTIONS.forTenant(collections, tenantKey(call.tenant)) });
  const { server, health } = await startServiceServer({
    services: [SubscriberService, TagService],
    routes: subscriberRoutes(deps, scopeOf),
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  outbox.start();
  logger.info({ url: server.url }, "subscribers service listening");

  return {
    url: server.url,
    port: server.port,
    outbox,
    async close() {
      health.setDraining();
      await server.close();
      await outbox.stop();
    },
  };
}
