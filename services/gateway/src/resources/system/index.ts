import type { Resource } from "../resource.js";
import { systemRoutes } from "./routes.js";
import { paths, schemas } from "./schemas.js";

export const systemResource: Resource = {
  tags: [
    { name: "Probes", description: "Liveness and readiness for orchestrators." },
    { name: "Meta", description: "This document." },
  ],
  schemas,
  paths,
  routes: systemRoutes,
};
