import type { Client } from "@connectrpc/connect";
import type { TagService } from "@emailsvc/proto";
import { callOptions } from "./calls.js";
import { defineRoute, type RouteKit } from "./define.js";
import { nextCursor, tagJson } from "./mapping.js";

/** /api/v1/tags: REST in, TagService calls out. */
export function tagRoutes(kit: RouteKit, tags: Client<typeof TagService>, timeoutMs: number): void {
  defineRoute(kit, "post", "/api/v1/tags", "createTag", async (ctx) => {
    // Defaults (description "", is_public false) were filled in by validation.
    const body = ctx.state.body as { name: string; description: string; is_public: boolean };
    const res = await tags.createTag(
      { name: body.name, description: body.description, isPublic: body.is_public },
      callOptions(ctx, timeoutMs),
    );
    ctx.status = 201;
    ctx.body = tagJson(res.tag);
  });

  defineRoute(kit, "get", "/api/v1/tags", "listTags", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await tags.listTags({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.tags.map(tagJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/tags/:id", "getTag", async (ctx) => {
    const res = await tags.getTag({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = tagJson(res.tag);
  });

  defineRoute(kit, "patch", "/api/v1/tags/:id", "updateTag", async (ctx) => {
    const body = ctx.state.body as { name?: string; description?: string; is_public?: boolean };
    const res = await tags.updateTag(
      { id: ctx.params.id ?? "", name: body.name, description: body.description, isPublic: body.is_public },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = tagJson(res.tag);
  });

  defineRoute(kit, "delete", "/api/v1/tags/:id", "deleteTag", async (ctx) => {
    await tags.deleteTag({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });
}
