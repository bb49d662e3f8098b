import { notFound } from "@emailsvc/errors";
import type { Scope } from "./deps.js";

/** Deletes a trigger; its fires not yet sent are skipped (`trigger_inactive`) when they come due. */
export async function deleteTrigger(scope: Scope, id: string): Promise<void> {
  if (!(await scope.triggers.deleteOne({ _id: id }))) throw notFound("trigger");
}
