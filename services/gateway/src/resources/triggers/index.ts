import type { Resource } from "../resource.js";
import { triggerRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const triggersResource: Resource = {
  tags: [{ name: "Triggers", description: "A template sent to a subscriber when something happens to them." }],
  schemas,
  parameters,
  paths,
  routes: triggerRoutes,
};
