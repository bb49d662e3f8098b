import type { Resource } from "../resource.js";
import { sessionRoutes } from "./routes.js";
import { paths, schemas } from "./schemas.js";

export const sessionResource: Resource = {
  tags: [{ name: "Session", description: "Dashboard sign-in, sign-out and password resets of an account's members." }],
  schemas,
  paths,
  routes: sessionRoutes,
};
