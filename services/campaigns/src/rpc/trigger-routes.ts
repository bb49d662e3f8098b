import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { triggers } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import { EVENT_TYPES, type TriggerView } from "../domain/trigger.js";
import type { Deps, Scope } from "../usecases/deps.js";
import { createTrigger } from "../usecases/create-trigger.js";
import { deleteTrigger } from "../usecases/delete-trigger.js";
import { getTrigger } from "../usecases/get-trigger.js";
import { listTriggers } from "../usecases/list-triggers.js";
import { updateTrigger } from "../usecases/update-trigger.js";

function triggerToProto(view: TriggerView): triggers.Trigger {
  return create(triggers.TriggerSchema, {
    id: view.id,
    eventType: view.eventType,
    templateId: view.templateId,
    description: view.description,
    isActive: view.isActive,
    delaySeconds: view.delaySeconds,
    tag: view.tag,
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
    disabledReason: view.disabledReason,
    lastFailureReason: view.lastFailureReason,
    ...(view.lastFailureAt !== null ? { lastFailureAt: timestampFromMs(view.lastFailureAt) } : {}),
  });
}

/** Registers TriggerService: proto in, use case, proto out. */
export function triggerRoutes(deps: Deps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  return (router) => {
    router.service(triggers.TriggerService, {
      async createTrigger(req, ctx) {
        const view = await createTrigger(deps, scopeOf(readCallContext(ctx)), {
          eventType: req.eventType,
          templateId: req.templateId,
          description: req.description,
          delaySeconds: req.delaySeconds,
          tag: req.tag,
        });
        return { trigger: triggerToProto(view) };
      },
      async getTrigger(req, ctx) {
        return { trigger: triggerToProto(await getTrigger(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listTriggers(req, ctx) {
        const page = await listTriggers(scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor });
        return { triggers: page.items.map(triggerToProto), nextCursor: page.nextCursor };
      },
      async updateTrigger(req, ctx) {
        const view = await updateTrigger(deps, scopeOf(readCallContext(ctx)), {
          id: req.id,
          isActive: req.isActive,
          description: req.description,
          templateId: req.templateId,
          delaySeconds: req.delaySeconds,
          tag: req.tag,
        });
        return { trigger: triggerToProto(view) };
      },
      async deleteTrigger(req, ctx) {
        await deleteTrigger(scopeOf(readCallContext(ctx)), req.id);
        return {};
      },
      async listEventTypes() {
        return { eventTypes: EVENT_TYPES.map((t) => ({ name: t.name, description: t.description, takesTag: t.takesTag })) };
      },
    });
  };
}
