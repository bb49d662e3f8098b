import type { Resource } from "../resource.js";
import { apiKeysRoutes } from "./routes.js";
import { parameters, paths } from "./schemas.js";

export const apiKeysResource: Resource = {
  tags: [{ name: "API keys", description: "The account's API keys, for its members in the dashboard (session only)." }],
  schemas: {},
  parameters,
  paths,
  routes: apiKeysRoutes,
};
