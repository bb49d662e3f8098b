import type { ConnectRouter, Transport } from "@connectrpc/connect";
import type { EventBus } from "@emailsvc/events";
import { campaigns, triggers } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer, type Logger } from "@emailsvc/runtime";
import type { DocumentStore } from "@emailsvc/storage";
import { TRIGGER_TOPICS, TriggerWorker } from "./messaging/triggers.js";
import { audienceClient, firingServices, templateDirectory, type FiringServices } from "./rpc/clients.js";
import { campaignRoutes } from "./rpc/services.js";
import { triggerRoutes } from "./rpc/trigger-routes.js";
import { CampaignStorage } from "./storage/repositories.js";
import { scopeOf, type Deps } from "./usecases/deps.js";

export interface CampaignsServiceOptions {
  store: DocumentStore;
  /** Where the subscribers' events come from (triggers). */
  bus: EventBus;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** The subscribers service (audiences, and who a trigger mails): its URL or a ready transport. */
  subscribers: string | Transport;
  /** The templates service: its URL or a ready transport. */
  templates: string | Transport;
  /** The delivery service (triggers send through it): its URL or a ready transport. */
  delivery: string | Transport;
  /** Replaces the calls firing makes (tests). */
  firing?: FiringServices;
  /** Consumer group of the subscribers' events (default `campaigns`; tests sharing a Kafka use their own). */
  consumerGroup?: string;
  /** How often the firer looks for due fires (default 1 s). */
  firerIntervalMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

export interface RunningCampaignsService {
  url: string;
  port: number;
  /** Drains: NOT_SERVING, in-flight calls finish. The store stays open (the caller owns it). */
  close(): Promise<void>;
}

function transportOf(target: string | Transport): Transport {
  return typeof target === "string" ? createServiceTransport(target) : target;
}


export async function startCampaignsService(options: CampaignsServiceOptions): Promise<RunningCampaignsService> {
  const { store, logger } = options;
  const storage = new CampaignStorage(store);
  await Promise.all([storage.createIndexes(), options.bus.ensureTopics([...TRIGGER_TOPICS])]);
  const deps: Deps = {
    audiences: audienceClient(transportOf(options.subscribers)),
    templates: templateDirectory(transportOf(options.templates)),
    logger,
    now: options.now ?? Date.now,
  };
  const scope = (call: Parameters<typeof scopeOf>[1]) => scopeOf((tenant) => storage.forTenant(tenant), call);
  const worker = new TriggerWorker(
    options.bus,
    storage.eventTenants(),
    storage.dueFires(),
    {
      firing:
        options.firing ??
        firingServices({
          subscribers: transportOf(options.subscribers),
          templates: transportOf(options.templates),
          delivery: transportOf(options.delivery),
        }),
      logger,
      now: deps.now,
    },
    { ...(options.consumerGroup ? { group: options.consumerGroup } : {}), ...(options.firerIntervalMs ? { intervalMs: options.firerIntervalMs } : {}) },
  );
  const { server, health } = await startServiceServer({
    services: [campaigns.CampaignService, triggers.TriggerService],
    routes: (router: ConnectRouter) => {
      campaignRoutes(deps, scope)(router);
      triggerRoutes(deps, scope)(router);
    },
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  try {
    await worker.start();
  } catch (err) {
    await server.close(0);
    throw err;
  }
  logger.info({ url: server.url }, "campaigns service listening");
  return {
    url: server.url,
    port: server.port,
    async close() {
      health.setDraining();
      await server.close();
      await worker.stop();
    },
  };
}
