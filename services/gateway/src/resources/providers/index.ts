import type { Resource } from "../resource.js";
import { providerNotificationRoutes } from "./routes.js";
import { paths } from "./schemas.js";

export const providersResource: Resource = {
  tags: [
    {
      name: "Providers",
      description: "What mail providers report about the mail they took (Amazon SES's bounces, complaints and deliveries, through SNS). Their signatures are the credential.",
    },
  ],
  schemas: {},
  paths,
  routes: providerNotificationRoutes,
};
