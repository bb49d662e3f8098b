import type { ConnectRouter, Transport } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer, type Logger } from "@emailsvc/runtime";
import { startPageServer, type PageServerOptions, type RunningPageServer } from "./page/server.js";
import { linkMailer, subscriberDirectory } from "./rpc/clients.js";
import type { Policy } from "@emailsvc/ratelimit";
import { preferenceCenterRoutes } from "./rpc/routes.js";
import type { PortalDeps } from "./usecases/preferences.js";

export interface PortalServiceOptions {
  logger: Logger;
  /** gRPC port; 0 picks a free one (tests, the embedded mode). */
  port: number;
  host?: string;
  /** The subscribers service: its URL or a ready transport. */
  subscribers: string | Transport;
  /** The portal page (PORTAL_PORT); left out, only the gRPC API runs. */
  page?: Omit<PageServerOptions, "deps" | "logger" | "newLink">;
  /** "Send me a new link" on the page: mailed through delivery with the tenant's template `template`. */
  newLinks?: { delivery: string | Transport; template: string; perIp: Policy; perAddress: Policy };
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
  const { server, health } = await startServiceServer({
    services: [portal.PreferenceCenterService],
    routes: (router: ConnectRouter) => preferenceCenterRoutes(deps)(router),
    // The portal keeps nothing of its own yet: it is ready when it listens.
    ready: async () => true,
    logger,
    port: options.port,
    host: options.host,
  });
  let page: RunningPageServer | undefined;
  try {
    const newLink = options.newLinks && {
      deps: { subscribers: deps.subscribers, mailer: linkMailer(transportOf(options.newLinks.delivery), options.newLinks.template), logger, now: Date.now },
      perIp: options.newLinks.perIp,
      perAddress: options.newLinks.perAddress,
    };
    page = options.page && (await startPageServer({ ...options.page, deps, logger, ...(newLink ? { newLink } : {}) }));
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
