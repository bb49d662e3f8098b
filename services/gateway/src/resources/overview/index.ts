import type { Resource } from "../resource.js";
import { overviewRoutes } from "./routes.js";
import { paths, schemas } from "./schemas.js";

export const overviewResource: Resource = {
  tags: [{ name: "Overview", description: "The dashboard's first page: sends, rates, running campaigns." }],
  schemas,
  paths,
  routes: overviewRoutes,
};
