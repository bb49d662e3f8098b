import { payloadOf, type WebhookEvent } from "../domain/event-types.js";
import { wants } from "../domain/endpoint.js";
import type { DeliveryDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { deliveryId } from "./deliveries.js";
import type { Deps } from "./deps.js";

/** Whether the tenant has an active endpoint: events of a tenant without one need not even be decoded. */
export async function hasActiveEndpoint(repos: TenantRepositories): Promise<boolean> {
  return (await repos.endpoints.findOne({ is_active: true })) !== null;
}

/**
 * Records one delivery per event of a tenant and active endpoint that asks
 * for its type, due now. Ids derive from the event and the endpoint, and
 * insertMany skips those already there, so an event the bus delivers again
 * records nothing twice; the consumer commits its position only after this
 * write, so a crash loses nothing. Returns how many are new.
 */
export async function recordDeliveries(deps: Pick<Deps, "now">, repos: TenantRepositories, events: readonly WebhookEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const endpoints = await repos.endpoints.find({ is_active: true });
  if (endpoints.length === 0) return 0;
  const now = deps.now();
  const docs: Array<Omit<DeliveryDoc, "tenant">> = [];
  for (const event of events) {
    const payload = payloadOf(event);
    const subscriberId = typeof event.data.subscriber_id === "string" ? event.data.subscriber_id : "";
    for (const endpoint of endpoints) {
      if (!wants(endpoint.events, event.type)) continue;
      docs.push({
        _id: deliveryId(event.eventId, endpoint._id),
        endpoint_id: endpoint._id,
        event_id: event.eventId,
        event_type: event.type,
        payload,
        subscriber_id: subscriberId,
        state: "pending",
        attempts: 0,
        next_attempt_at: now,
        lease_until: 0,
        last_code: 0,
        last_duration_ms: 0,
        last_error: "",
        last_attempt_at: 0,
        attempt_log: [],
        retry_from: now,
        created_at: now,
        updated_at: now,
      });
    }
  }
  if (docs.length === 0) return 0;
  return (await repos.deliveries.insertMany(docs)).inserted;
}
