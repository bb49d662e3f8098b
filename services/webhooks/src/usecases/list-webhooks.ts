import { pageById } from "@emailsvc/ids";
import type { TenantFilter } from "@emailsvc/storage";
import type { EndpointDoc } from "../storage/documents.js";
import { webhookView, type Deps, type Page, type Scope, type WebhookView } from "./deps.js";

/** The tenant's endpoints, oldest first, a page at a time. */
export async function listWebhooks(deps: Pick<Deps, "now">, scope: Scope, input: { limit: number; cursor: string }): Promise<Page<WebhookView>> {
  const page = await pageById(input, { idPrefix: "whk" }, ({ range, options }) => scope.endpoints.find(range as TenantFilter<EndpointDoc>, options));
  const now = deps.now();
  return { items: page.docs.map((doc) => webhookView(doc, now)), nextCursor: page.nextCursor };
}
