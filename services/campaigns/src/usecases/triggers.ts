import { newId, notFound, pageById } from "@emailsvc/runtime";
import type { TenantFilter } from "@emailsvc/storage";
import { validateDelay, validateDescription, validateEventType, validateTagFor, type TriggerView } from "../domain/trigger.js";
import type { TriggerDoc } from "../storage/documents.js";
import type { Page } from "./campaigns.js";
import { checkReferences, type Deps, type Scope } from "./deps.js";

// Triggers: create (active at once), read, list, change, delete.

export function triggerView(doc: TriggerDoc): TriggerView {
  return {
    id: doc._id,
    eventType: doc.event_type,
    templateId: doc.template_id,
    description: doc.description,
    isActive: doc.is_active,
    delaySeconds: doc.delay_seconds,
    tag: doc.tag,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}

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

async function load(scope: Scope, id: string): Promise<TriggerDoc> {
  const doc = id ? await scope.triggers.findOne({ _id: id }) : null;
  if (!doc) throw notFound("trigger");
  return doc;
}

export async function getTrigger(scope: Scope, id: string): Promise<TriggerView> {
  return triggerView(await load(scope, id));
}

export async function listTriggers(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<TriggerView>> {
  const page = await pageById(input, { idPrefix: "trg" }, ({ range, options }) => scope.triggers.find(range as TenantFilter<TriggerDoc>, options));
  return { items: page.docs.map(triggerView), nextCursor: page.nextCursor };
}

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
  const current = await load(scope, input.id);
  const set: Partial<TriggerDoc> = {};
  if (input.isActive !== undefined) set.is_active = input.isActive;
  if (input.description !== undefined) set.description = validateDescription(input.description);
  if (input.templateId !== undefined) set.template_id = input.templateId;
  if (input.delaySeconds !== undefined) set.delay_seconds = validateDelay(input.delaySeconds);
  if (input.tag !== undefined) set.tag = validateTagFor(current.event_type, input.tag);
  await checkReferences(deps, scope, { templateId: input.templateId, ...(input.tag ? { tag: input.tag } : {}) });
  const doc = await scope.triggers.updateOne({ _id: input.id }, { $set: { ...set, updated_at: deps.now() } });
  if (!doc) throw notFound("trigger");
  return triggerView(doc);
}

/** Deletes a trigger; fires already pending for it still go out (the events happened while it was active). */
export async function deleteTrigger(scope: Scope, id: string): Promise<void> {
  if (!(await scope.triggers.deleteOne({ _id: id }))) throw notFound("trigger");
}
