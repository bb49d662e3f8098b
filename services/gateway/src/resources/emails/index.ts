import type { Resource } from "../resource.js";
import { emailRoutes } from "./routes.js";
import { headers, parameters, paths, schemas } from "./schemas.js";

export const emailsResource: Resource = {
  tags: [{ name: "Emails", description: "Transactional sending (idempotent), delivery status, and the sandbox." }],
  schemas,
  parameters,
  headers,
  paths,
  routes: emailRoutes,
};
