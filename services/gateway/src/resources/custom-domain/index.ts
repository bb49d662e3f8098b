import type { Resource } from "../resource.js";
import { customDomainRoutes } from "./routes.js";
import { paths, schemas } from "./schemas.js";

export const customDomainResource: Resource = {
  tags: [
    {
      name: "Custom domain",
      description:
        "Your preference portal on a host of your own (Professional plan): a CNAME to the platform, then a certificate issued automatically. Settings > Preference Center > Custom Domain.",
    },
  ],
  schemas,
  paths,
  routes: customDomainRoutes,
};
