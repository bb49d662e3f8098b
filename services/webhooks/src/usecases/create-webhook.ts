import { newId } from "@emailsvc/ids";
import { seal } from "@emailsvc/tokens";
import { checkDescription, checkEvents, checkUrl, MAX_ENDPOINTS, tooManyEndpoints } from "../domain/endpoint.js";
import { newSecret } from "../domain/signature.js";
import type { EndpointDoc } from "../storage/documents.js";
import { SECRET_PURPOSE, webhookView, type Deps, type Scope, type WebhookView } from "./deps.js";

/** A new endpoint, active at once; its secret is answered here once and stored only sealed. */
export async function createWebhook(
  deps: Deps,
  scope: Scope,
  input: { url: string; events: readonly string[]; description: string },
): Promise<{ webhook: WebhookView; secret: string }> {
  const url = checkUrl(deps.urlRules, input.url);
  const events = checkEvents(input.events);
  const description = checkDescription(input.description);
  // A bound, not a counter: two creates at once may both pass it by one.
  if ((await scope.endpoints.count({})) >= MAX_ENDPOINTS) throw tooManyEndpoints();
  const secret = newSecret();
  const now = deps.now();
  const doc: Omit<EndpointDoc, "tenant"> = {
    _id: newId("whk"),
    url,
    events,
    description,
    is_active: true,
    disabled_reason: "",
    disabled_at: 0,
    secret_sealed: seal(deps.sealingKeys, SECRET_PURPOSE, secret),
    previous_secret_sealed: "",
    previous_secret_expires_at: 0,
    failing_since: 0,
    created_at: now,
    updated_at: now,
  };
  await scope.endpoints.insertOne(doc);
  return { webhook: webhookView({ ...doc, tenant: scope.endpoints.tenant }, now), secret };
}
