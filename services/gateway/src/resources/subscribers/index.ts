import type { Resource } from "../resource.js";
import { subscriberRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const subscribersResource: Resource = {
  tags: [{ name: "Subscribers", description: "Subscribers, their tags and audit trail." }],
  schemas,
  parameters,
  paths,
  routes: subscriberRoutes,
};
