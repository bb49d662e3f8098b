import type { Transport } from "@connectrpc/connect";
import { campaigns } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer, type Logger } from "@emailsvc/runtime";
import type { DocumentStore } from "@emailsvc/storage";
import { audienceClient, templateDirectory, type AudienceSource, type TemplateDirectory } from "./rpc/clients.js";
import { campaignRoutes } from "./rpc/services.js";
import { CampaignStorage } from "./storage/repositories.js";
import { scopeOf, type Deps } from "./usecases/deps.js";

export interface CampaignsServiceOptions {
  store: DocumentStore;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** The subscribers service (AudienceService): its URL or a ready transport; or a fake (unit tests). */
  subscribers: string | Transport | AudienceSource;
  /** The templates service: its URL or a ready transport; or a fake (unit tests). */
  templates: string | Transport | TemplateDirectory;
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

const isAudienceSource = (x: unknown): x is AudienceSource => typeof (x as AudienceSource).count === "function";
const isTemplateDirectory = (x: unknown): x is TemplateDirectory => typeof (x as TemplateDirectory).exists === "function";

export async function startCampaignsService(options: CampaignsServiceOptions): Promise<RunningCampaignsService> {
  const { store, logger } = options;
  const storage = new CampaignStorage(store);
  await storage.createIndexes();
  const deps: Deps = {
    audiences: isAudienceSource(options.subscribers) ? options.subscribers : audienceClient(transportOf(options.subscribers)),
    templates: isTemplateDirectory(options.templates) ? options.templates : templateDirectory(transportOf(options.templates)),
    logger,
    now: options.now ?? Date.now,
  };
  const { server, health } = await startServiceServer({
    services: [campaigns.CampaignService],
    routes: campaignRoutes(deps, (call) => scopeOf((tenant) => storage.forTenant(tenant), call)),
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  logger.info({ url: server.url }, "campaigns service listening");
  return {
    url: server.url,
    port: server.port,
    async close() {
      health.setDraining();
      await server.close();
    },
  };
}
