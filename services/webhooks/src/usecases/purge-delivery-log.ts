import type { CrossTenantCollection } from "@emailsvc/storage";
import type { DeliveryDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

/**
 * The log's retention: deliveries finished (delivered or failed) before
 * `cutoff` are deleted, each in its own tenant, up to `limit` a run. The log
 * holds subscriber ids; it is not kept for ever, and an endpoint's log stays
 * the size of its recent traffic. Returns how many went.
 */
export async function purgeDeliveryLog(
  finished: CrossTenantCollection<DeliveryDoc>,
  forTenant: (tenant: string) => TenantRepositories,
  cutoff: number,
  limit = 1000,
): Promise<number> {
  const old = await finished.find({ state: { $in: ["delivered", "failed"] }, updated_at: { $lt: cutoff } }, { limit });
  const byTenant = new Map<string, string[]>();
  for (const doc of old) byTenant.set(doc.tenant, [...(byTenant.get(doc.tenant) ?? []), doc._id]);
  let purged = 0;
  for (const [tenant, ids] of byTenant) {
    // Guarded again: a delivery replayed since it was read stays.
    purged += await forTenant(tenant).deliveries.deleteMany({ _id: { $in: ids }, state: { $in: ["delivered", "failed"] }, updated_at: { $lt: cutoff } });
  }
  return purged;
}
