import * as path from "node:path";
import { ConfigError } from "@emailsvc/runtime";
import { defineService } from "@emailsvc/service";
import { KeyConfigError, loadKeyRing } from "@emailsvc/tokens";
import { loadConfig } from "./config.js";
import { describeSmtp } from "./providers/smtp.js";
import { startDeliveryService } from "./server.js";

/** The delivery service as the skeleton and the embedded launcher start it. */
export const deliveryService = defineService({
  name: "delivery",
  usesBus: true,
  // Templates: compiled versions (cannot send without). Subscribers: the
  // recipient's metadata and the link erasure follows (optional). Portal: the
  // account's active custom domain for preference links (optional: the
  // portal calls delivery, so this edge must not hold delivery's start).
  calls: { templates: "required", subscribers: "optional", portal: "optional" },
  loadConfig,
  start: async ({ store, bus, logger, port, host, urls, dataDir, embeddedStore, developmentSecretsDir }, config) => {
    if (!bus) throw new Error("the delivery service needs the event bus");
    let tokenKeys;
    try {
      tokenKeys = loadKeyRing({ value: config.tokenSigningKeys, developmentDir: developmentSecretsDir });
    } catch (err) {
      throw err instanceof KeyConfigError ? new ConfigError(err.message) : err;
    }
    const service = await startDeliveryService({
      store,
      bus,
      logger,
      port,
      host,
      templatesUrl: urls.templates!,
      ...(urls.subscribers ? { subscribersUrl: urls.subscribers } : {}),
      ...(urls.portal ? { portalUrl: urls.portal } : {}),
      provider: config.provider,
      ...(config.smtp ? { smtp: config.smtp } : {}),
      from: config.from,
      sweepIntervalMs: config.sweepIntervalMs,
      stalledAfterMs: config.stalledAfterMs,
      tokenKeys,
      publicApiUrl: config.publicApiUrl,
      unsubscribeTtlDays: config.unsubscribeTtlDays,
      preferenceLinks: config.preferenceLinks,
      sendConcurrency: config.sendConcurrency,
      testModeDailyLimit: config.testModeDailyLimit,
      sandbox: {
        retentionMs: config.sandboxRetentionMs,
        maxPerTenant: config.sandboxMaxPerTenant,
        // The embedded store holds every document in memory: bodies go to files beside it.
        ...(embeddedStore ? { bodiesDir: path.join(dataDir, "sandbox") } : {}),
      },
    });
    if (config.provider === "smtp" && config.smtp) logger.info({ relay: describeSmtp(config.smtp) }, "sending live mail through SMTP");
    return service;
  },
});
