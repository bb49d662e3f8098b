import type { TenantUpdate } from "@emailsvc/storage";
import { checkDescription, checkEvents, checkUrl } from "../domain/endpoint.js";
import type { EndpointDoc } from "../storage/documents.js";
import { loadEndpoint, webhookView, type Deps, type Scope, type WebhookView } from "./deps.js";

/**
 * Changes the fields given. `isActive: true` turns an endpoint on again and
 * clears why the platform turned it off (its failing streak starts afresh);
 * `false` stops it (deliveries due meanwhile fail with `endpoint_disabled`,
 * and can be replayed).
 */
export async function updateWebhook(
  deps: Deps,
  scope: Scope,
  input: { id: string; url?: string | undefined; events?: readonly string[] | undefined; description?: string | undefined; isActive?: boolean | undefined },
): Promise<WebhookView> {
  const $set: NonNullable<TenantUpdate<EndpointDoc>["$set"]> = { updated_at: deps.now() };
  // A missing endpoint is a 404 whatever the body says.
  await loadEndpoint(scope, input.id);
  if (input.url !== undefined) $set.url = checkUrl(deps.urlRules, input.url);
  if (input.events !== undefined) $set.events = checkEvents(input.events);
  if (input.description !== undefined) $set.description = checkDescription(input.description);
  if (input.isActive !== undefined) {
    $set.is_active = input.isActive;
    if (input.isActive) Object.assign($set, { disabled_reason: "", disabled_at: 0, failing_since: 0 });
  }
  const updated = await scope.endpoints.updateOne({ _id: input.id }, { $set });
  if (!updated) return webhookView(await loadEndpoint(scope, input.id), deps.now());
  if (input.isActive) deps.wake?.();
  return webhookView(updated, deps.now());
}
