import type { Resource } from "../resource.js";
import { unsubscribeRoutes } from "./routes.js";
import { parameters, paths } from "./schemas.js";

export const unsubscribeResource: Resource = {
  tags: [
    {
      name: "Unsubscribe",
      description:
        "The one-click unsubscribe link (RFC 8058) of marketing mail's `List-Unsubscribe` header. Its signed token is the credential.",
    },
  ],
  schemas: {},
  parameters,
  paths,
  routes: unsubscribeRoutes,
};
