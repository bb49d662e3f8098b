import * as path from "node:path";
import { ConfigError } from "@emailsvc/runtime";
import { defineService } from "@emailsvc/service";
import { KeyConfigError, loadKeyRing } from "@emailsvc/tokens";
import { loadConfig } from "./config.js";
import { startDeliveryService } from "./server.js";

/** The delivery service as the skeleton and the embedded launcher start it: its manifest entry (packages/manifest) and its code. */
export const deliveryService = defineService("delivery", {
  loadConfig,
  start: async ({ store, bus, logger, port, host, urls, dataDir, embeddedStore, developmentSecretsDir }, config) => {
    if (!bus) throw new Error("the delivery service needs the event bus");
    let tokenKeys;
    let sealingKeys;
    try {
      tokenKeys = loadKeyRing({ value: config.tokenSigningKeys, developmentDir: developmentSecretsDir });
      sealingKeys = loadKeyRing({ value: config.sealingKeys, developmentDir: developmentSecretsDir, variable: "SEALING_KEYS" });
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
      providers: config.providers,
      from: config.from,
      sweepIntervalMs: config.sweepIntervalMs,
      stalledAfterMs: config.stalledAfterMs,
      tokenKeys,
      publicApiUrl: config.publicApiUrl,
      unsubscribeTtlDays: config.unsubscribeTtlDays,
      preferenceLinks: config.preferenceLinks,
      sendConcurrency: config.sendConcurrency,
      testModeDailyLimit: config.testModeDailyLimit,
      sealingKeys,
      senderDomains: {
        spfInclude: config.spfInclude,
        returnPathHost: config.returnPathHost,
        ...(config.dnsServers ? { dnsServers: config.dnsServers } : {}),
        recheck: { firstDelayMs: config.firstRecheckMs },
      },
      feedbackTag: config.feedbackTag,
      ...(config.platformDkim ? { platformDkim: config.platformDkim } : {}),
      retry: config.retry,
      outcomeBatches: config.outcomeBatches,
      ...(config.bounceReceiver ? { bounceReceiver: config.bounceReceiver } : {}),
      sesNotifications: { topics: config.sesNotificationTopics, ...(config.sesCertificateFetcher ? { fetchCertificate: config.sesCertificateFetcher } : {}) },
      sandbox: {
        retentionMs: config.sandboxRetentionMs,
        maxPerTenant: config.sandboxMaxPerTenant,
        // The embedded store holds every document in memory: bodies go to files beside it.
        ...(embeddedStore ? { bodiesDir: path.join(dataDir, "sandbox") } : {}),
      },
    });
    return service;
  },
});
