import { defineService } from "@emailsvc/service";
import { loadConfig } from "./config.js";
import { startSubscribersService } from "./server.js";

/** The subscribers service as the skeleton and the embedded launcher start it. */
export const subscribersService = defineService({
  name: "subscribers",
  usesBus: true,
  calls: {},
  loadConfig,
  start: ({ store, bus, logger, port, host }, config) => {
    if (!bus) throw new Error("the subscribers service needs the event bus");
    return startSubscribersService({ store, bus, logger, port, host, sweepIntervalMs: config.sweepIntervalMs });
  },
});
