import type { Resource } from "../resource.js";
import { templateRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const templatesResource: Resource = {
  tags: [{ name: "Templates", description: "MJML templates with `{{variables}}`, versioned, and their preview." }],
  schemas,
  parameters,
  paths,
  routes: templateRoutes,
};
