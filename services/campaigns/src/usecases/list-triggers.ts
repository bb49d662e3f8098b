import { pageById } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import type { TriggerView } from "../domain/trigger.js";
import type { TriggerDoc } from "../storage/documents.js";
import type { Page, Scope } from "./deps.js";
import { triggerView } from "./views.js";

/** The tenant's triggers, oldest first, a page at a time. */
export async function listTriggers(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<TriggerView>> {
  const page = await pageById(input, { idPrefix: "trg" }, ({ range, options }) => scope.triggers.find(range as TenantFilter<TriggerDoc>, options));
  return { items: page.docs.map(triggerView), nextCursor: page.nextCursor };
}
