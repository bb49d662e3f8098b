import { defineService } from "@emailsvc/service";
import { ConfigError } from "@emailsvc/runtime";
import { KeyConfigError, loadKeyRing } from "@emailsvc/tokens";
import { loadConfig } from "./config.js";
import { startPortalService } from "./server.js";

/** The portal service as the skeleton and the embedded launcher start it: its manifest entry (packages/manifest) and its code. */
export const portalService = defineService("portal", {
  loadConfig,
  start: ({ store, logger, port, host, urls, developmentSecretsDir }, config) => {
    let keys;
    try {
      // The page verifies the links delivery and the gateway sign, and signs its own page sessions.
      keys = loadKeyRing({ value: config.tokenSigningKeys, developmentDir: developmentSecretsDir });
    } catch (err) {
      if (err instanceof KeyConfigError) throw new ConfigError(err.message);
      throw err;
    }
    return startPortalService({
      store,
      logger,
      port,
      host,
      subscribers: urls.subscribers!,
      delivery: urls.delivery!,
      campaigns: urls.campaigns!,
      templates: urls.templates!,
      page: {
        keys,
        port: config.pagePort,
        host: config.pageHost,
        defaultFrameAncestors: config.frameAncestors,
        trustedProxyHops: config.trustedProxyHops,
      },
      newLinks: { template: config.linkTemplate, perIp: config.linkRequestsPerIp, perAddress: config.linkRequestsPerAddress },
      customDomains: config.customDomains,
      rateLimits: config.rateLimits,
      signupForms: config.signupForms,
    });
  },
});
