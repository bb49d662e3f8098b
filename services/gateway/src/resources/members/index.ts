import type { Resource } from "../resource.js";
import { membersRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const membersResource: Resource = {
  tags: [{ name: "Members", description: "An account's people in the dashboard: members and their roles, invitations." }],
  schemas,
  parameters,
  paths,
  routes: membersRoutes,
};
