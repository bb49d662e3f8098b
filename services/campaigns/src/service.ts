import { defineService } from "@emailsvc/service";
import { loadConfig } from "./config.js";
import { startCampaignsService } from "./server.js";

/** The campaigns service as the skeleton and the embedded launcher start it: its manifest entry (packages/manifest) and its code. */
export const campaignsService = defineService("campaigns", {
  loadConfig,
  start: ({ store, bus, logger, port, host, urls }, settings) => {
    if (!bus) throw new Error("the campaigns service needs the event bus");
    return startCampaignsService({
      store,
      bus,
      logger,
      port,
      host,
      subscribers: urls.subscribers!,
      templates: urls.templates!,
      delivery: urls.delivery!,
      settings,
    });
  },
});
