import { createClient } from "@connectrpc/connect";
import { TagService } from "@emailsvc/proto";
import { callOptions, requestAudit } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import { tagJson } from "./mapping.js";
import type { TagCreateBody, TagUpdateBody } from "./schemas.js";

/** The body's translations (descriptions defaulted to "" by validation) as the service takes them. */
function translationsProto(given: Record<string, { name: string; description?: string } | undefined> = {}): Record<string, { name: string; description: string }> {
  const out: Record<string, { name: string; description: string }> = {};
  for (const [locale, t] of Object.entries(given)) if (t) out[locale] = { name: t.name, description: t.description ?? "" };
  return out;
}

/** /api/v1/tags: REST in, TagService (of the subscribers service) calls out. */
export function tagRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("subscribers");
  if (!transport) throw new Error("the tag routes need the subscribers service");
  const tags = createClient(TagService, transport);
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/tags", "createTag", async (ctx) => {
    const body = ctx.state.body as TagCreateBody;
    const res = await tags.createTag(
      { name: body.name, description: body.description, isPublic: body.is_public, translations: translationsProto(body.translations) },
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
    const body = ctx.state.body as TagUpdateBody;
    const res = await tags.updateTag(
      {
        id: ctx.params.id ?? "",
        name: body.name,
        description: body.description,
        isPublic: body.is_public,
        ...(body.translations !== undefined ? { translations: { byLocale: translationsProto(body.translations) } } : {}),
      },
      callOptions(ctx, timeoutMs),
    );
    ctx.body = tagJson(res.tag);
  });

  defineRoute(kit, "delete", "/api/v1/tags/:id", "deleteTag", async (ctx) => {
    // Deleting a tag removes it from its members: each removal is audited as coming from the API.
    await tags.deleteTag({ id: ctx.params.id ?? "", audit: requestAudit(ctx, "api", context.clientIp) }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });
}
