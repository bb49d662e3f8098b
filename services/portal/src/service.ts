import { defineService } from "@emailsvc/service";
import { loadConfig } from "./config.js";
import { startPortalService } from "./server.js";

/** The portal service as the skeleton and the embedded launcher start it. */
export const portalService = defineService({
  name: "portal",
  usesBus: false,
  // Subscribers: the subscriber, their tags, their changes and their erasure.
  calls: { subscribers: "required" },
  loadConfig,
  start: ({ logger, port, host, urls }) => startPortalService({ logger, port, host, subscribers: urls.subscribers! }),
});
