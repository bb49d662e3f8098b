import { Problem } from "../../http/problem.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";

/** Probes for orchestrators and the OpenAPI document; no authentication. */
export function systemRoutes(kit: RouteKit, { ready }: ResourceContext): void {
  // Serialised once: the document does not change while the process runs.
  const document = JSON.stringify(kit.doc);

  defineRoute(kit, "get", "/healthz", "getHealth", async (ctx) => {
    ctx.body = { status: "ok" };
  });

  defineRoute(kit, "get", "/readyz", "getReadiness", async (ctx) => {
    if (!(await ready())) throw new Problem("not_ready", "The gateway is not ready to serve requests.");
    ctx.body = { status: "ok" };
  });

  defineRoute(kit, "get", "/api/v1/openapi.json", "getOpenApiDocument", async (ctx) => {
    ctx.type = "application/json";
    ctx.body = document;
  });
}
