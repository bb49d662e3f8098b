import type { Resource } from "../resource.js";
import { webhookRoutes } from "./routes.js";
import { parameters, paths, schemas, webhooks } from "./schemas.js";

export const webhooksResource: Resource = {
  tags: [{ name: "Webhooks", description: "Endpoints of yours the platform tells about events, signed as the Standard Webhooks specification says." }],
  schemas,
  parameters,
  paths,
  webhooks,
  routes: webhookRoutes,
};
