import type { TenantRepositories } from "../storage/repositories.js";

/**
 * Erasure: the deliveries about a subscriber go, sent or not, except
 * `subscriber.deleted` itself, which tells the integrator to erase their copy
 * (it holds the id alone). A subscriber's id is personal data while it can be
 * linked to them; the log keeps nothing of them after this.
 */
export async function eraseSubscriber(repos: TenantRepositories, subscriberId: string): Promise<number> {
  return repos.deliveries.deleteMany({ subscriber_id: subscriberId, event_type: { $ne: "subscriber.deleted" } });
}
