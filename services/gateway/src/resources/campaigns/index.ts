import type { Resource } from "../resource.js";
import { campaignRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const campaignsResource: Resource = {
  tags: [{ name: "Campaigns", description: "Marketing sends of one template to every active subscriber a tag filter matches." }],
  schemas,
  parameters,
  paths,
  routes: campaignRoutes,
};
