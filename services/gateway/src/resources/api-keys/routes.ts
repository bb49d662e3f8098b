import { InvalidCursorError } from "../../accounts/store.js";
import { Problem } from "../../http/problem.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { apiKeyJson, pageJson } from "../admin/mapping.js";
import type { ApiKeyCreateBody } from "../admin/schemas.js";
import type { ResourceContext } from "../resource.js";

export function apiKeysRoutes(kit: RouteKit, { accounts, authenticator }: ResourceContext): void {
  defineRoute(kit, "get", "/api/v1/api-keys", "listKeys", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    try {
      ctx.body = pageJson(await accounts.listApiKeys(ctx.state.auth!.accountId, query.limit, query.cursor), apiKeyJson);
    } catch (err) {
      if (err instanceof InvalidCursorError) throw new Problem("validation_failed", "The cursor is not valid.", { errors: [{ field: "cursor", message: "is not a cursor of this list" }] });
      throw err;
    }
  });

  defineRoute(kit, "post", "/api/v1/api-keys", "createKey", async (ctx) => {
    const created = await accounts.createApiKey(ctx.state.auth!.accountId, ctx.state.body as ApiKeyCreateBody);
    ctx.status = 201;
    // The only response that ever holds the full key.
    ctx.set("Cache-Control", "no-store");
    ctx.body = { ...apiKeyJson(created), key: created.key };
  });

  defineRoute(kit, "delete", "/api/v1/api-keys/:id", "revokeKey", async (ctx) => {
    const revoked = await accounts.revokeApiKey(ctx.state.auth!.accountId, ctx.params.id ?? "");
    if (!revoked) throw new Problem("not_found", "The account has no such API key.");
    authenticator.forget(revoked.hash);
    ctx.status = 204;
  });
}
