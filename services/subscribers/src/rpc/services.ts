import type { ConnectRouter } from "@connectrpc/connect";
import { SubscriberService, TagService } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/runtime";
import { createSubscriber } from "../usecases/create-subscriber.js";
import { deleteSubscriber } from "../usecases/delete-subscriber.js";
import type { Deps, Scope } from "../usecases/deps.js";
import { getSubscriber, getSubscriberByEmail } from "../usecases/get-subscriber.js";
import { listSubscriberEvents } from "../usecases/list-subscriber-events.js";
import { listSubscribers } from "../usecases/list-subscribers.js";
import { addTags, removeTag } from "../usecases/subscriber-tags.js";
import { createTag, deleteTag, getTag, listTags, updateTag } from "../usecases/tags.js";
import { updateSubscriber } from "../usecases/update-subscriber.js";
import { auditToProto, statusFromProto, subscriberToProto, tagToProto } from "./mapping.js";

/**
 * Registers SubscriberService and TagService: proto in, use case, proto out.
 * Each call's scope (its tenant's repositories) comes from `scopeOf`, built
 * from the call's authenticated tenant.
 */
export function subscriberRoutes(deps: Deps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  const scopeFor = (ctx: Parameters<typeof readCallContext>[0]) => scopeOf(readCallContext(ctx));
  return (router) => {
    router.service(SubscriberService, {
      async createSubscriber(req, ctx) {
        const view = await createSubscriber(deps, scopeFor(ctx), {
          email: req.email,
          tags: req.tags,
          metadata: req.metadata,
          status: statusFromProto(req.status),
        });
        return { subscriber: subscriberToProto(view) };
      },
      async getSubscriber(req, ctx) {
        return { subscriber: subscriberToProto(await getSubscriber(scopeFor(ctx), req.id)) };
      },
      async getSubscriberByEmail(req, ctx) {
        return { subscriber: subscriberToProto(await getSubscriberByEmail(scopeFor(ctx), req.email)) };
      },
      async listSubscribers(req, ctx) {
        const page = await listSubscribers(scopeFor(ctx), {
          limit: req.limit,
          status: statusFromProto(req.status),
          cursor: req.cursor,
        });
        return { subscribers: page.items.map(subscriberToProto), nextCursor: page.nextCursor };
      },
      async updateSubscriber(req, ctx) {
        const view = await updateSubscriber(deps, scopeFor(ctx), {
          id: req.id,
          email: req.email,
          status: statusFromProto(req.status),
          metadata: req.metadata,
        });
        return { subscriber: subscriberToProto(view) };
      },
      async deleteSubscriber(req, ctx) {
        await deleteSubscriber(deps, scopeFor(ctx), req.id);
        return {};
      },
      async addTags(req, ctx) {
        const view = await addTags(deps, scopeFor(ctx), req.subscriberId, req.tags);
        return { subscriber: subscriberToProto(view) };
      },
      async removeTag(req, ctx) {
        const view = await removeTag(deps, scopeFor(ctx), req.subscriberId, req.tagName);
        return { subscriber: subscriberToProto(view) };
      },
      async listSubscriberEvents(req, ctx) {
        const page = await listSubscriberEvents(scopeFor(ctx), {
          subscriberId: req.subscriberId,
          limit: req.limit,
          cursor: req.cursor,
        });
        return { events: page.items.map(auditToProto), nextCursor: page.nextCursor };
      },
    });
    router.service(TagService, {
      async createTag(req, ctx) {
        const view = await createTag(deps, scopeFor(ctx), {
          name: req.name,
          description: req.description,
          isPublic: req.isPublic,
        });
        return { tag: tagToProto(view) };
      },
      async getTag(req, ctx) {
        return { tag: tagToProto(await getTag(scopeFor(ctx), req.id)) };
      },
      async listTags(req, ctx) {
        const page = await listTags(scopeFor(ctx), { limit: req.limit, cursor: req.cursor });
        return { tags: page.items.map(tagToProto), nextCursor: page.nextCursor };
      },
      async updateTag(req, ctx) {
        const view = await updateTag(deps, scopeFor(ctx), {
          id: req.id,
          name: req.name,
          description: req.description,
          isPublic: req.isPublic,
        });
        return { tag: tagToProto(view) };
      },
      async deleteTag(req, ctx) {
        await deleteTag(deps, scopeFor(ctx), req.id);
        return {};
      },
    });
  };
}
