import type { Resource } from "../resource.js";
import { formRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const formsResource: Resource = {
  tags: [
    {
      name: "Signup forms",
      description:
        "Public signup forms for your own site: a plain HTML form posting to the portal, protected against bots without third parties (a honeypot, a proof of work, per-IP, per-address and per-form limits, allowed origins).",
    },
  ],
  schemas,
  parameters,
  paths,
  routes: formRoutes,
};
