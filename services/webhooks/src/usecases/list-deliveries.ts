import { pageById } from "@emailsvc/ids";
import { deliveryView, type DeliveryView } from "./deliveries.js";
import { loadEndpoint, type Page, type Scope } from "./deps.js";

/** An endpoint's delivery log, newest first, a page at a time (404 for an endpoint not the tenant's). */
export async function listDeliveries(scope: Scope, input: { webhookId: string; limit: number; cursor: string }): Promise<Page<DeliveryView>> {
  await loadEndpoint(scope, input.webhookId);
  const page = await pageById(input, { idPrefix: "msg", filterKey: input.webhookId, newestFirst: true }, ({ range, options }) =>
    scope.deliveries.find({ endpoint_id: input.webhookId, ...range }, options),
  );
  return { items: page.docs.map(deliveryView), nextCursor: page.nextCursor };
}
