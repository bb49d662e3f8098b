import type { CrossTenantCollection } from "@emailsvc/storage";
import type { TemplateDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

/**
 * Removes deleted templates whose retention has passed, with their versions:
 * found across tenants (the sweep runs inside the service), each purged within
 * its own tenant's collections. Versions go first, so a crash halfway leaves
 * the template to be purged by the next sweep.
 */
export async function purgeDeletedTemplates(
  deleted: CrossTenantCollection<TemplateDoc>,
  forTenant: (tenant: string) => TenantRepositories,
  deletedBefore: number,
  batch = 100,
): Promise<number> {
  const due = await deleted.find({ deleted: true, deleted_at: { $lt: deletedBefore } }, { limit: batch });
  let purged = 0;
  for (const template of due) {
    const repos = forTenant(template.tenant);
    await repos.versions.deleteMany({ template_id: template._id });
    if (await repos.templates.deleteOne({ _id: template._id, deleted: true })) purged++;
  }
  return purged;
}
