import type { ConnectRouter, Transport } from "@connectrpc/connect";
import { encodeEvent, type EventBus } from "@emailsvc/events";
import { OutboxRelay } from "@emailsvc/outbox";
import { DocumentCounterStore } from "@emailsvc/ratelimit";
import { campaigns, triggers } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { type Logger } from "@emailsvc/telemetry";
import type { DocumentStore } from "@emailsvc/storage";
import { loadConfig } from "./config.js";
import { subscribeCampaignEvents } from "./messaging/consumer.js";
import { topicsOf } from "@emailsvc/manifest";
import { CampaignDispatcher } from "./messaging/dispatcher.js";
import { TriggerWorker } from "./messaging/triggers.js";
import type { CampaignDoc } from "./storage/documents.js";
import { audienceClient, firingServices, templateDirectory } from "./rpc/clients.js";
import type { FiringServices } from "./usecases/ports.js";
import { campaignRoutes } from "./rpc/services.js";
import { triggerRoutes } from "./rpc/trigger-routes.js";
import { CampaignStorage } from "./storage/repositories.js";
import { scopeOf, type CampaignSettings, type Deps } from "./usecases/deps.js";

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
  /** How campaigns are sent (default: CAMPAIGN_* from the environment, see config.ts). */
  settings?: CampaignSettings;
  /** How long a dispatcher's lease on a campaign lasts without renewal (default 15 s; tests of a takeover shorten it). */
  leaseMs?: number;
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
  await Promise.all([storage.createIndexes(), options.bus.ensureTopics(topicsOf("campaigns"))]);
  const now = options.now ?? Date.now;
  const settings = options.settings ?? loadConfig();
  // Each campaign's change of status goes out on campaign.status_changed (delivery keeps the cancelled ones).
  const relay = new OutboxRelay<CampaignDoc>({
    documents: storage.outboxSweep(),
    bus: options.bus,
    logger,
    name: "campaigns",
    clock: now,
    events: (doc, entry) => [
      encodeEvent("campaign.status_changed", { eventId: entry.id, tenant: doc.tenant, occurredAt: entry.at }, { campaignId: doc._id, status: entry.status }),
    ],
  });
  // Sending budgets (CAMPAIGN_RATE, CAMPAIGN_DAILY_LIMIT, TEST_MODE_DAILY_LIMIT) are counted in the store:
  // they hold across restarts and replicas.
  const limiter =
    settings.rate || settings.dailyLimit || settings.testModeDailyLimit
      ? await DocumentCounterStore.open(store, { collection: "campaign_send_rates", logger, clock: now })
      : undefined;
  const deps: Deps = {
    audiences: audienceClient(transportOf(options.subscribers)),
    templates: templateDirectory(transportOf(options.templates)),
    logger,
    now,
    relay,
    settings,
  };
  const dispatcher = new CampaignDispatcher(deps, storage.campaignsToDispatch(), storage.eventTenants(), options.bus, limiter, {
    owner: newId("dsp"),
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
  });
  deps.wake = () => dispatcher.wake();
  const scope = (call: Parameters<typeof scopeOf>[1]) => scopeOf((tenant) => storage.forTenant(tenant), call);
  const worker = new TriggerWorker(
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
    options.firerIntervalMs ? { intervalMs: options.firerIntervalMs } : {},
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
  let subscription;
  try {
    subscription = await subscribeCampaignEvents(options.bus, {
      ...(options.consumerGroup ? { group: options.consumerGroup } : {}),
      logger,
      triggers: worker,
      tenants: storage.eventTenants(),
      now,
      compactAfterErasure: () => storage.compactAfterErasure(),
    });
  } catch (err) {
    await server.close(0);
    throw err;
  }
  worker.start();
  relay.start();
  dispatcher.start();
  logger.info({ url: server.url }, "campaigns service listening");
  return {
    url: server.url,
    port: server.port,
    async close() {
      health.setDraining();
      await server.close();
      await subscription.stop();
      await Promise.all([worker.stop(), dispatcher.stop()]);
      await relay.stop();
      await limiter?.close();
    },
  };
}
