import * as path from "node:path";
import { ConfigError } from "@emailsvc/runtime";
import { defineService } from "@emailsvc/service";
import { KeyConfigError, loadKeyRing } from "@emailsvc/tokens";
import { loadConfig } from "./config.js";
import { startSubscribersService } from "./server.js";

/** The subscribers service as the skeleton and the embedded launcher start it: its manifest entry (packages/manifest) and its code. */
export const subscribersService = defineService("subscribers", {
  loadConfig,
  start: ({ store, bus, logger, port, host, urls, dataDir, embeddedStore, developmentSecretsDir }, config) => {
    if (!bus) throw new Error("the subscribers service needs the event bus");
    let suppressionKeys;
    try {
      suppressionKeys = loadKeyRing({ value: config.suppressionKeys, developmentDir: developmentSecretsDir, variable: "SUPPRESSION_KEYS" });
    } catch (err) {
      throw err instanceof KeyConfigError ? new ConfigError(err.message) : err;
    }
    return startSubscribersService({
      store,
      bus,
      logger,
      port,
      host,
      sweepIntervalMs: config.sweepIntervalMs,
      suppressionKeys,
      softBounces: config.softBounces,
      expirySweepIntervalMs: config.expirySweepIntervalMs,
      ...(urls.delivery ? { deliveryUrl: urls.delivery } : {}),
      ...(urls.templates ? { templatesUrl: urls.templates } : {}),
      minConfirmationExpirySeconds: config.minConfirmationExpirySeconds,
      // The embedded store holds every document in memory: an upload's chunks go to files beside it.
      // It is also this process's alone (its directory is locked): an import a crash left running resumes at once.
      imports: {
        ...(embeddedStore ? { spoolDir: path.join(dataDir, "imports"), soleWorker: true } : {}),
        leaseMs: config.importLeaseMs,
        batchRows: config.importBatchRows,
      },
    });
  },
});
