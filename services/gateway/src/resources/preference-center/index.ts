import type { Resource } from "../resource.js";
import { preferenceCenterRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const preferenceCenterResource: Resource = {
  tags: [
    {
      name: "Preference center",
      description:
        "The subscriber's own API, opened by a preference token (`Authorization: Bearer <token>`): their subscriptions, leaving everything, and erasure. The same actions as the portal page.",
    },
  ],
  schemas,
  parameters,
  paths,
  routes: preferenceCenterRoutes,
};
