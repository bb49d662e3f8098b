import type { Resource } from "../resource.js";
import { tagRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const tagsResource: Resource = {
  tags: [{ name: "Tags", description: "Tags that group subscribers." }],
  schemas,
  parameters,
  paths,
  routes: tagRoutes,
};
