import { AppError, notFound } from "@emailsvc/errors";
import type { Deps, Scope } from "./deps.js";
import type { TemplateUser } from "./ports.js";

/**
 * Soft delete, one guarded write: the template disappears from get, list,
 * update, preview and slug lookup, and its slug is free at once (the unique
 * key becomes `<slug>~<id>`). Its versions stay, so mail queued with an
 * id and version still renders (GetCompiledTemplate); the purge sweep removes
 * template and versions once the retention has passed.
 *
 * A template in use is not deleted: while a trigger names it, or a campaign
 * may still send it (draft, scheduled, sending, paused), the answer is a 409
 * `template_in_use` naming them, and nothing changes. Otherwise the trigger
 * would stay active and fail every fire, and the campaign could not start.
 * Who uses it is the campaigns service's to say (a 503 when it cannot now).
 */
export async function deleteTemplate(deps: Deps, scope: Scope, id: string): Promise<void> {
  const current = id ? await scope.templates.findOne({ _id: id, deleted: false }) : null;
  if (!current) throw notFound("template");
  if (deps.users) {
    const { users, total } = await deps.users.of(scope.call, id);
    if (total > 0) throw inUse(users, total);
  }
  const now = deps.now();
  const doc = await scope.templates.updateOne(
    { _id: id, deleted: false },
    { $set: { deleted: true, deleted_at: now, updated_at: now, slug_key: `${current.slug}~${id}` } },
  );
  if (!doc) throw notFound("template");
}

/** "the template is used by trigger trg_… (active), campaign cmp_… (draft) and 3 more; …" */
function inUse(users: readonly TemplateUser[], total: number): AppError {
  const named = users.map((u) => `${u.kind} ${u.id} (${u.state})`);
  const more = total > users.length ? ` and ${total - users.length} more` : "";
  const list = named.length > 1 && !more ? `${named.slice(0, -1).join(", ")} and ${named.at(-1)}` : `${named.join(", ")}${more}`;
  return new AppError(
    "conflict",
    "template_in_use",
    `the template is used by ${list}; delete those or give them another template first (finished campaigns do not count)`,
  );
}
