import { defineService } from "@emailsvc/service";
import { defaultCompiler } from "./compile-pool.js";
import { loadConfig } from "./config.js";
import { startTemplatesService } from "./server.js";

const DAY_MS = 24 * 60 * 60 * 1000;

/** The templates service as the skeleton and the embedded launcher start it: its manifest entry (packages/manifest) and its code. */
export const templatesService = defineService("templates", {
  loadConfig,
  start: ({ store, logger, port, host, urls }, config) =>
    startTemplatesService({
      store,
      logger,
      port,
      host,
      ...(urls.campaigns ? { campaigns: urls.campaigns } : {}),
      purgeAfterMs: config.purgeAfterDays * DAY_MS,
      compiler: defaultCompiler(config.compileWorkers > 0 ? { size: config.compileWorkers } : {}),
    }),
});
