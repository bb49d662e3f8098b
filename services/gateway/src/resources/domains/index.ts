import type { Resource } from "../resource.js";
import { senderDomainRoutes } from "./routes.js";
import { parameters, paths, schemas } from "./schemas.js";

export const senderDomainsResource: Resource = {
  tags: [
    {
      name: "Sending domains",
      description:
        "The domains you send From: DKIM keys generated for you, the DNS records to publish (DKIM, SPF, DMARC, return path), verification, and DKIM signing of every message From them.",
    },
  ],
  schemas,
  parameters,
  paths,
  routes: senderDomainRoutes,
};
