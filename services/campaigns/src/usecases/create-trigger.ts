import { newId } from "@emailsvc/runtime";
import { validateDelay, validateDescription, validateEventType, validateTagFor, type TriggerView } from "../domain/trigger.js";
import { checkReferences, type Deps, type Scope } from "./deps.js";
import { triggerView } from "./views.js";

/** A new trigger, active at once: a known event type, a live template of the tenant, a tag of theirs (tag events only). */
export async function createTrigger(
  deps: Deps,
  scope: Scope,
  input: { eventType: string; templateId: string; description: string; delaySeconds: number; tag: string },
): Promise<TriggerView> {
  const eventType = validateEventType(input.eventType);
  const tag = validateTagFor(eventType, input.tag);
  const doc = {
    _id: newId("trg"),
    event_type: eventType,
    template_id: input.templateId,
    description: validateDescription(input.description),
    is_active: true,
    delay_seconds: validateDelay(input.delaySeconds),
    tag,
    created_at: deps.now(),
    updated_at: deps.now(),
  };
  await checkReferences(deps, scope, { templateId: input.templateId, ...(tag ? { tag } : {}) });
  await scope.triggers.insertOne(doc);
  return triggerView({ ...doc, tenant: scope.triggers.tenant });
}
