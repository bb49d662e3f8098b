import { templates } from "@emailsvc/proto";
import { startServiceServer, type Logger } from "@emailsvc/runtime";
import type { DocumentStore } from "@emailsvc/storage";
import { defaultCompiler, type BodyCompiler } from "./compile-pool.js";
import { templateRoutes } from "./rpc/services.js";
import { TEMPLATE_INDEXES, VERSION_INDEXES, type TemplateDoc, type TemplateVersionDoc } from "./storage/documents.js";
import { purgeDeletedTemplates } from "./usecases/delete-template.js";
import type { Deps } from "./usecases/deps.js";

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
  const templateDocs = store.collection<TemplateDoc>("templates");
  const versionDocs = store.collection<TemplateVersionDoc>("template_versions");
  await Promise.all([templateDocs.createIndexes(TEMPLATE_INDEXES), versionDocs.createIndexes(VERSION_INDEXES)]);

  const now = options.now ?? Date.now;
  const deps: Deps = {
    templates: templateDocs,
    versions: versionDocs,
    compiler: options.compiler ?? defaultCompiler(),
    logger,
    now,
  };
  const purgeAfterMs = options.purgeAfterMs ?? 30 * DAY_MS;
  const purge = () => purgeDeletedTemplates(deps, now() - purgeAfterMs);

  const { server, health } = await startServiceServer({
    services: [templates.TemplateService],
    routes: templateRoutes(deps),
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
