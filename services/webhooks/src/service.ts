import { ConfigError } from "@emailsvc/runtime";
import { defineService } from "@emailsvc/service";
import { KeyConfigError, loadKeyRing } from "@emailsvc/tokens";
import { loadConfig } from "./config.js";
import { startWebhooksService } from "./server.js";

/** The webhooks service as the skeleton and the embedded launcher start it: its manifest entry (packages/manifest) and its code. */
export const webhooksService = defineService("webhooks", {
  loadConfig,
  start: ({ store, bus, logger, port, host, urls, developmentSecretsDir }, config) => {
    if (!bus) throw new Error("the webhooks service needs the event bus");
    let sealingKeys;
    try {
      sealingKeys = loadKeyRing({ value: config.sealingKeys, developmentDir: developmentSecretsDir, variable: "SEALING_KEYS" });
    } catch (err) {
      throw err instanceof KeyConfigError ? new ConfigError(err.message) : err;
    }
    if (!urls.delivery) logger.warn("DELIVERY_URL is not set: email webhooks carry no recipient address (to: null)");
    return startWebhooksService({
      ...(urls.delivery ? { delivery: urls.delivery } : {}),
      store,
      bus,
      logger,
      port,
      host,
      sealingKeys,
      allowHttp: config.allowHttp,
      allowPrivateRanges: config.allowPrivateRanges,
      timeoutMs: config.timeoutMs,
      retry: { delaysMs: config.retryDelaysMs, retryForMs: config.retryForMs },
      disableAfterMs: config.disableAfterMs,
      senderIntervalMs: config.senderIntervalMs,
      logRetentionMs: config.logRetentionDays * 24 * 60 * 60 * 1000,
    });
  },
});
