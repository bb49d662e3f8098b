import type { PortalCall, PortalDeps } from "./preferences.js";

/**
 * The click on a double opt-in confirmation link's button (the page's POST;
 * its GET only shows the button, so that a mail scanner fetching the link
 * confirms nothing). Charged to the subscriber's write budget like every
 * change made here; the subscribers service audits it with the click's IP
 * and user agent, the confirmation in the consent record.
 */
export async function confirmSubscription(deps: PortalDeps, portal: PortalCall): Promise<"confirmed" | "not_pending" | "gone"> {
  await deps.budgets.charge(portal, "write");
  return deps.subscribers.confirm(portal.call, portal.subscriberId, portal.client);
}
