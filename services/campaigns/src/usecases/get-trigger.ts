import type { TriggerView } from "../domain/trigger.js";
import { loadTrigger, type Scope } from "./deps.js";
import { triggerView } from "./views.js";

/** One trigger of the tenant, or 404. */
export async function getTrigger(scope: Scope, id: string): Promise<TriggerView> {
  return triggerView(await loadTrigger(scope, id));
}
