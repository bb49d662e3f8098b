import type { Resource } from "../resource.js";
import { passkeysRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const passkeysResource: Resource = {
  tags: [{ name: "Passkeys", description: "A member's passkeys (WebAuthn), registered while signed in; signing in with one is under Session." }],
  schemas,
  parameters,
  paths,
  routes: passkeysRoutes,
};
