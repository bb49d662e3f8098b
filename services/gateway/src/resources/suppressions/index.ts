import type { Resource } from "../resource.js";
import { suppressionRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const suppressionsResource: Resource = {
  tags: [{ name: "Suppressions", description: "The account's suppression list: addresses that are not mailed, and why." }],
  schemas,
  parameters,
  paths,
  routes: suppressionRoutes,
};
