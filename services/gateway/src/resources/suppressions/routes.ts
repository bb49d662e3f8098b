import { createClient } from "@connectrpc/connect";
import { SuppressionReason, SuppressionService } from "@emailsvc/proto";
import { callOptions, requestAudit } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { reasonFromJson, suppressionJson } from "./mapping.js";
import type { SuppressionCreateBody } from "./schemas.js";

/** /api/v1/suppressions: REST in, SuppressionService (of the subscribers service) calls out. */
export function suppressionRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("subscribers");
  if (!transport) throw new Error("the suppression routes need the subscribers service");
  const suppressions = createClient(SuppressionService, transport);
  const { timeoutMs } = context;

  defineRoute(kit, "get", "/api/v1/suppressions", "listSuppressions", async (ctx) => {
    const query = ctx.state.query as { limit: number; reason?: string; cursor?: string; email?: string };
    const res = await suppressions.listSuppressions(
      { limit: query.limit, reason: reasonFromJson(query.reason), cursor: query.cursor ?? "", email: query.email ?? "" },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = { items: res.suppressions.map(suppressionJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "post", "/api/v1/suppressions", "createSuppression", async (ctx) => {
    const body = ctx.state.body as SuppressionCreateBody;
    const res = await suppressions.addSuppression(
      { email: body.email, reason: SuppressionReason.MANUAL, audit: requestAudit(ctx, "api", context.clientIp) },
      callOptions(ctx, timeoutMs),
    );
    ctx.status = res.created ? 201 : 200;
    ctx.body = suppressionJson(res.suppression);
  });

  defineRoute(kit, "delete", "/api/v1/suppressions/:email", "deleteSuppression", async (ctx) => {
    const query = ctx.state.query as { reason: string };
    // The router has URL-decoded the parameter.
    const res = await suppressions.removeSuppression(
      { email: ctx.params.email ?? "", reason: query.reason, audit: requestAudit(ctx, "api", context.clientIp) },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = suppressionJson(res.suppression);
  });
}
