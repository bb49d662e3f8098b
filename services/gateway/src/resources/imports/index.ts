import type { Resource } from "../resource.js";
import { importRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const importsResource: Resource = {
  tags: [{ name: "Imports", description: "Bulk imports of subscribers from CSV or NDJSON files: jobs, their progress and their reports." }],
  schemas,
  parameters,
  paths,
  routes: importRoutes,
};
