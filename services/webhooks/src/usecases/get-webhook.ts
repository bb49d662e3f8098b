import { loadEndpoint, webhookView, type Deps, type Scope, type WebhookView } from "./deps.js";

/** One endpoint of the tenant (without its secret), or 404. */
export async function getWebhook(deps: Pick<Deps, "now">, scope: Scope, id: string): Promise<WebhookView> {
  return webhookView(await loadEndpoint(scope, id), deps.now());
}
