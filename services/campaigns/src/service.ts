import { defineService } from "@emailsvc/service";
import { loadConfig } from "./config.js";
import { startCampaignsService } from "./server.js";

/** The campaigns service as the skeleton and the embedded launcher start it. */
export const campaignsService = defineService({
  name: "campaigns",
  // Consumes the subscribers' events (triggers) and delivery's email.status (the ledger); hands recipients to delivery.
  usesBus: true,
  // Subscribers: audiences, and who a trigger mails. Templates: what is sent. Delivery: the sending.
  calls: { subscribers: "required", templates: "required", delivery: "required" },
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
