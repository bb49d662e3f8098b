import { createClient, type Transport } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { ExpiringCache } from "@emailsvc/async";
import { callHeaders, tenantKey, type KeyMode } from "@emailsvc/tenancy";
import type { AccountStore } from "./store.js";

/** How long a sender name is kept: a change made through another replica shows within this. */
const TTL_MS = 30_000;

/**
 * Who the one-click pages say the mail came from: the account's portal
 * setting `sender_name` (asked of the portal), else the account's name.
 * Kept per account and mode for 30 s, because every click on an unsubscribe
 * link (and every link scanner) would otherwise ask the portal and the
 * accounts store again for a name that rarely changes; a change made through
 * this gateway (PATCH /api/v1/portal-settings) applies at once. When the
 * portal does not answer, the account's name is used and nothing is kept:
 * the page matters more than its wording.
 */
export class SenderNames {
  private readonly cache = new ExpiringCache<string>(() => TTL_MS, { maxEntries: 10_000 });
  private readonly settings: ReturnType<typeof createClient<typeof portal.PortalSettingsService>> | undefined;

  constructor(
    private readonly accounts: AccountStore,
    portalTransport: Transport | undefined,
    private readonly timeoutMs: number,
  ) {
    this.settings = portalTransport && createClient(portal.PortalSettingsService, portalTransport);
  }

  async of(tenant: { accountId: string; mode: KeyMode }): Promise<string> {
    try {
      return await this.cache.get(tenantKey(tenant), async () => {
        const call = { tenant, actor: "one_click", requestId: "" };
        const [settings, account] = await Promise.all([
          this.settings?.getPortalSettings({}, { headers: callHeaders(call), timeoutMs: this.timeoutMs }),
          this.accounts.getAccount(tenant.accountId),
        ]);
        return settings?.settings?.senderName || account?.name || "";
      });
    } catch {
      return (await this.accounts.getAccount(tenant.accountId).catch(() => undefined))?.name ?? "";
    }
  }

  /** This gateway changed the tenant's settings: the next page asks again. */
  forget(tenant: { accountId: string; mode: KeyMode }): void {
    this.cache.forget(tenantKey(tenant));
  }
}
