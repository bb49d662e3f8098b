import type { Transport } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer } from "@emailsvc/grpc";
import { type Logger } from "@emailsvc/telemetry";
import type { DocumentStore } from "@emailsvc/storage";
import { defaultCompiler } from "./compile-pool.js";
import { templateUsersClient } from "./rpc/clients.js";
import { templateRoutes } from "./rpc/services.js";
import { TemplateStorage } from "./storage/repositories.js";
import { scopeOf, type Deps } from "./usecases/deps.js";
import type { BodyCompiler, TemplateUsers } from "./usecases/ports.js";
import { purgeDeletedTemplates } from "./usecases/purge-deleted-templates.js";

export interface TemplatesServiceOptions {
  store: DocumentStore;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** How long a deleted template's versions stay for mail queued before the delete. Default 30 days. */
  purgeAfterMs?: number;
  /** Period of the purge sweep. Default 1 hour; tests shorten it. */
  purgeIntervalMs?: number;
  /**
   * Checks and compiles new template bodies, and renders previews. Default: a
   * pool of worker threads when running from the build (dist), else in this
   * thread. Closed by close().
   */
  compiler?: BodyCompiler;
  /**
   * The campaigns service (its URL or a ready transport), asked who uses a
   * template before it is deleted; or a TemplateUsers of the test's own.
   * Unset: deletes are not checked (a warning at start says so).
   */
  campaigns?: string | Transport | TemplateUsers;
  /** Clock (tests). */
  now?: () => number;
}

export interface RunningTemplatesService {
  url: string;
  port: number;
  /** Runs one purge sweep now; resolves to the number of templates removed. */
  purge(): Promise<number>;
  /** Drains: NOT_SERVING, in-flight calls finish, the sweep stops. The store stays open (the caller owns it). */
  close(): Promise<void>;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export async function startTemplatesService(options: TemplatesServiceOptions): Promise<RunningTemplatesService> {
  const { store, logger } = options;
  const storage = new TemplateStorage(store);
  await storage.createIndexes();

  const now = options.now ?? Date.now;
  const deps: Deps = {
    compiler: options.compiler ?? defaultCompiler(),
    users: templateUsersOf(options.campaigns),
    logger,
    now,
  };
  if (!deps.users) logger.warn("CAMPAIGNS_URL is not set: deleting a template does not check the triggers and campaigns that use it");
  const purgeAfterMs = options.purgeAfterMs ?? 30 * DAY_MS;
  const forTenant = (tenant: string) => storage.forTenant(tenant);
  const purge = () => purgeDeletedTemplates(storage.purgeSweep(), forTenant, now() - purgeAfterMs);

  const { server, health } = await startServiceServer({
    services: [templates.TemplateService],
    routes: templateRoutes(deps, (call) => scopeOf(forTenant, call)),
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });

  let sweeping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    sweeping = purge()
      .then((n) => {
        if (n > 0) logger.info({ purged: n }, "deleted templates purged");
      })
      .catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, "purge sweep failed"));
  }, options.purgeIntervalMs ?? 60 * 60 * 1000);
  timer.unref();
  logger.info({ url: server.url }, "templates service listening");

  return {
    url: server.url,
    port: server.port,
    purge,
    async close() {
      health.setDraining();
      clearInterval(timer);
      await server.close();
      await sweeping;
      await deps.compiler.close();
    },
  };
}

function templateUsersOf(campaigns: TemplatesServiceOptions["campaigns"]): TemplateUsers | undefined {
  if (campaigns === undefined) return undefined;
  if (typeof campaigns === "object" && "of" in campaigns) return campaigns;
  return templateUsersClient(typeof campaigns === "string" ? createServiceTransport(campaigns) : campaigns);
}
