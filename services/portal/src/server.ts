import type { ConnectRouter, Transport } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer, type Logger } from "@emailsvc/runtime";
import { startPageServer, type PageServerOptions, type RunningPageServer } from "./page/server.js";
import { exportSources, linkMailer, subscriberDirectory } from "./rpc/clients.js";
import type { ExportDeps } from "./usecases/export.js";
import type { Policy } from "@emailsvc/ratelimit";
import { portalSettingsRoutes, preferenceCenterRoutes } from "./rpc/routes.js";
import { PortalStorage } from "./storage/settings.js";
import { FrameAncestorsCache, type SettingsDeps } from "./usecases/settings.js";
import type { DocumentStore } from "@emailsvc/storage";
import type { PortalDeps } from "./usecases/preferences.js";

export interface PortalServiceOptions {
  /** The portal's own database (the accounts' page settings). */
  store: DocumentStore;
  logger: Logger;
  /** gRPC port; 0 picks a free one (tests, the embedded mode). */
  port: number;
  host?: string;
  /** The subscribers service: its URL or a ready transport. */
  subscribers: string | Transport;
  /** Delivery and campaigns: their parts of a subscriber's export. */
  delivery: string | Transport;
  campaigns: string | Transport;
  /** Templates: the default template of a fresh link, created in an account that has none. */
  templates: string | Transport;
  /** The portal page (PORTAL_PORT); left out, only the gRPC API runs. */
  page?: Omit<PageServerOptions, "deps" | "exportDeps" | "logger" | "newLink" | "frameAncestors"> & {
    /** The page's frame-ancestors where an account set none (PORTAL_FRAME_ANCESTORS). */
    defaultFrameAncestors: readonly string[];
  };
  /** "Send me a new link" on the page: mailed through delivery with the tenant's template `template`. */
  newLinks?: { template: string; perIp: Policy; perAddress: Policy };
}

export interface RunningPortalService {
  url: string;
  port: number;
  /** The portal page's base URL, when it runs. */
  publicUrl: string | undefined;
  /** Drains: NOT_SERVING, in-flight calls finish. */
  close(): Promise<void>;
}

function transportOf(target: string | Transport): Transport {
  return typeof target === "string" ? createServiceTransport(target) : target;
}

export async function startPortalService(options: PortalServiceOptions): Promise<RunningPortalService> {
  const { logger } = options;
  const deps: PortalDeps = { subscribers: subscriberDirectory(transportOf(options.subscribers)) };
  const storage = new PortalStorage(options.store);
  const settingsDeps: SettingsDeps = { storage, now: Date.now };
  const exportDeps: ExportDeps = {
    sources: exportSources({
      subscribers: transportOf(options.subscribers),
      delivery: transportOf(options.delivery),
      campaigns: transportOf(options.campaigns),
    }),
    now: Date.now,
  };
  const { server, health } = await startServiceServer({
    services: [portal.PreferenceCenterService, portal.PortalSettingsService],
    routes: (router: ConnectRouter) => {
      preferenceCenterRoutes(deps, exportDeps)(router);
      portalSettingsRoutes(settingsDeps)(router);
    },
    ready: () => options.store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  let page: RunningPageServer | undefined;
  try {
    const newLink = options.newLinks && {
      deps: { subscribers: deps.subscribers, mailer: linkMailer({ delivery: transportOf(options.delivery), templates: transportOf(options.templates) }, options.newLinks.template), logger, now: Date.now },
      perIp: options.newLinks.perIp,
      perAddress: options.newLinks.perAddress,
    };
    if (options.page) {
      const { defaultFrameAncestors, ...pageOptions } = options.page;
      const frameAncestors = new FrameAncestorsCache(settingsDeps, defaultFrameAncestors);
      settingsDeps.changed = (tenant) => frameAncestors.forget(tenant);
      page = await startPageServer({ ...pageOptions, deps, exportDeps, logger, frameAncestors, ...(newLink ? { newLink } : {}) });
    }
  } catch (err) {
    await server.close(0);
    throw err;
  }
  logger.info({ url: server.url }, "portal service listening");
  return {
    url: server.url,
    port: server.port,
    publicUrl: page?.url,
    async close() {
      health.setDraining();
      await Promise.all([server.close(), page?.close()]);
    },
  };
}
