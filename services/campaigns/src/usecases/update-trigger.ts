import { notFound } from "@emailsvc/errors";
import { validateDelay, validateDescription, validateTagFor, type TriggerView } from "../domain/trigger.js";
import type { TriggerDoc } from "../storage/documents.js";
import { checkReferences, loadTrigger, type Deps, type Scope } from "./deps.js";
import { triggerView } from "./views.js";

/** Changes a trigger; fields not given keep their value, a template or tag given is checked as on create. */
export async function updateTrigger(
  deps: Deps,
  scope: Scope,
  input: {
    id: string;
    isActive: boolean | undefined;
    description: string | undefined;
    templateId: string | undefined;
    delaySeconds: number | undefined;
    tag: string | undefined;
  },
): Promise<TriggerView> {
  const current = await loadTrigger(scope, input.id);
  const set: Partial<TriggerDoc> = {};
  // Turning it on or off is the owner's decision from now on: the platform's reason goes.
  if (input.isActive !== undefined) Object.assign(set, { is_active: input.isActive, disabled_reason: "" });
  if (input.description !== undefined) set.description = validateDescription(input.description);
  if (input.templateId !== undefined) set.template_id = input.templateId;
  if (input.delaySeconds !== undefined) set.delay_seconds = validateDelay(input.delaySeconds);
  if (input.tag !== undefined) set.tag = validateTagFor(current.event_type, input.tag);
  // Turned on, it must name a live template: the one given, else its own (which may have gone).
  const templateId = input.templateId ?? (input.isActive ? current.template_id : undefined);
  await checkReferences(deps, scope, { templateId, ...(input.tag ? { tag: input.tag } : {}) });
  const doc = await scope.triggers.updateOne({ _id: input.id }, { $set: { ...set, updated_at: deps.now() } });
  if (!doc) throw notFound("trigger");
  return triggerView(doc);
}
