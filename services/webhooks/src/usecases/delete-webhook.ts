import { loadEndpoint, type Scope } from "./deps.js";

/** Deletes an endpoint and its delivery log; a delivery in flight finds it gone and is dropped. */
export async function deleteWebhook(scope: Scope, id: string): Promise<void> {
  await loadEndpoint(scope, id);
  await scope.endpoints.deleteOne({ _id: id });
  await scope.deliveries.deleteMany({ endpoint_id: id });
}
