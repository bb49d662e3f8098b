import type { Resource } from "../resource.js";
import { preferenceCenterRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const preferenceCenterResource: Resource = {
  tags: [
    {
      name: "Preference center",
      description:
        "The subscriber's own API, opened by a preference token (`Authorization: Bearer <token>`): their subscriptions, leaving everything, and erasure. The same actions as the portal page, with the same budgets: each operation's `x-rate-limit-class` is counted per subscriber and per account and mode by the portal, for this API and the page together, so using both doors buys no more.",
    },
  ],
  schemas,
  parameters,
  paths,
  routes: preferenceCenterRoutes,
};
