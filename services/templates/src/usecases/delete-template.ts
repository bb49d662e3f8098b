import { notFound } from "@emailsvc/runtime";
import type { Filter } from "@emailsvc/storage";
import type { Deps, Scope } from "./deps.js";

/**
 * Soft delete, one guarded write: the template disappears from get, list,
 * update, preview and slug lookup, and its slug is free at once (the unique
 * key becomes `<slug>~<id>`). Its versions stay, so mail queued with an
 * id and version still renders (GetCompiledTemplate); the purge sweep removes
 * template and versions once the retention has passed.
 */
export async function deleteTemplate(deps: Deps, scope: Scope, id: string): Promise<void> {
  const current = id ? await scope.templates.findOne({ _id: id, deleted: false }) : null;
  if (!current) throw notFound("template");
  const now = deps.now();
  const doc = await scope.templates.updateOne(
    { _id: id, deleted: false },
    { $set: { deleted: true, deleted_at: now, updated_at: now, slug_key: `${current.slug}~${id}` } },
  );
  if (!doc) throw notFound("template");
}

/**
 * Removes deleted templates whose retention has passed, with their versions
 * (all tenants; the sweep runs inside the service). Versions go first, so a
 * crash halfway leaves the template to be purged by the next sweep.
 */
export async function purgeDeletedTemplates(deps: Deps, deletedBefore: number, batch = 100): Promise<number> {
  const due = await deps.templates.find({ deleted: true, deleted_at: { $lt: deletedBefore } }, { limit: batch });
  let purged = 0;
  for (const template of due) {
    const versions: Filter = { tenant: template.tenant, template_id: template._id };
    await deps.versions.deleteMany(versions);
    if (await deps.templates.deleteOne({ tenant: template.tenant, _id: template._id, deleted: true })) purged++;
  }
  return purged;
}
