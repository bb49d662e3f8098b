import type { Resource } from "../resource.js";
import { adminRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const adminResource: Resource = {
  tags: [{ name: "Admin", description: "Accounts and API keys (operator token)." }],
  schemas,
  parameters,
  paths,
  routes: adminRoutes,
};
