import { notFound } from "@emailsvc/errors";
import { deliveryView, type DeliveryView } from "./deliveries.js";
import { loadEndpoint, type Deps, type Scope } from "./deps.js";

/**
 * Sends a delivery again, now, with the same `webhook-id` and body (a
 * receiver that deduplicates by id sees it as the same message): a failed or
 * delivered one becomes pending, a pending one is due at once. Its attempts
 * and log go on. A delivery being attempted right now is left to finish.
 */
export async function replayDelivery(deps: Deps, scope: Scope, input: { webhookId: string; deliveryId: string }): Promise<DeliveryView> {
  await loadEndpoint(scope, input.webhookId);
  const now = deps.now();
  const replayed = await scope.deliveries.updateOne(
    { _id: input.deliveryId, endpoint_id: input.webhookId, lease_until: { $lt: now } },
    // The retry window starts again from the replay.
    { $set: { state: "pending", next_attempt_at: now, retry_from: now, updated_at: now } },
  );
  if (replayed) {
    deps.wake?.();
    return deliveryView(replayed);
  }
  const doc = input.deliveryId ? await scope.deliveries.findOne({ _id: input.deliveryId, endpoint_id: input.webhookId }) : null;
  if (!doc) throw notFound("webhook delivery");
  return deliveryView(doc);
}
