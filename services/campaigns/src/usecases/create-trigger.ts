import { newId } from "@emailsvc/ids";
import { validateDelay, validateDescription, validateEventType, validateTagFor, type TriggerView } from "../domain/trigger.js";
import { checkReferences, requireTemplate, type Deps, type Scope } from "./deps.js";
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
  await undoUnlessTemplateLives(deps, scope, doc._id, input.templateId);
  return triggerView({ ...doc, tenant: scope.triggers.tenant });
}

/**
 * The template is asked for again once the trigger is stored: a delete of the
 * template asks campaigns for its users first, so a delete that did not see
 * this trigger has already happened (or starts after this, and sees it). A
 * trigger whose template went meanwhile is removed again (404); the instant
 * left between the delete's question and its write is covered by the firer,
 * which turns such a trigger off visibly.
 */
export async function undoUnlessTemplateLives(deps: Deps, scope: Scope, triggerId: string, templateId: string): Promise<void> {
  try {
    await requireTemplate(deps, scope, templateId);
  } catch (err) {
    await scope.triggers.deleteOne({ _id: triggerId });
    throw err;
  }
}
