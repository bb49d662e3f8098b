import { defineService } from "@emailsvc/service";
import { loadConfig } from "./config.js";
import { startCampaignsService } from "./server.js";

/** The campaigns service as the skeleton and the embedded launcher start it. */
export const campaignsService = defineService({
  name: "campaigns",
  usesBus: false,
  // Subscribers: the audience of a filter (and its tags checked). Templates: the template a campaign sends.
  calls: { subscribers: "required", templates: "required" },
  loadConfig,
  start: ({ store, logger, port, host, urls }) =>
    startCampaignsService({ store, logger, port, host, subscribers: urls.subscribers!, templates: urls.templates! }),
});
