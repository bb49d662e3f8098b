import { createClient, type Transport } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { ExpiringCache } from "@emailsvc/async";
import { callHeaders } from "@emailsvc/tenancy";
import type { PreferenceLinkSettings } from "./preference-link.js";

// Where a tenant's preference links point: `https://<its custom domain>` once
// the portal says the account's custom domain is active, else PREFERENCES_URL.
// Used by the two that mint links for mail and API answers: delivery
// (`{{preference_center_url}}`) and the gateway (POST
// /subscribers/{id}/preference-token).
//
// Why a call to the portal with a small cache, and not an event: the portal
// already calls delivery (required, for "send me a new link"), so delivery and
// the gateway call the portal's DomainService as an OPTIONAL dependency (no
// start-up cycle: the skeleton starts required ones first). A domain changes
// state rarely; a 30 s cache per account keeps the call off the sending path
// (one lookup per account per 30 s, concurrent ones share it), and a link is
// still correct when the cache is stale: the PREFERENCES_URL host serves every
// account, a custom domain serves its own. When the portal cannot answer
// (down, slow beyond timeoutMs, not configured), links use PREFERENCES_URL:
// mail is never held up for a nicer link.

export type CustomDomainLookup = (accountId: string) => Promise<string>;

/** The portal's ResolveCustomDomain (the account's active domain, "" for none). */
export function portalDomainLookup(transport: Transport, timeoutMs = 1000): CustomDomainLookup {
  const client = createClient(portal.DomainService, transport);
  return async (accountId) => {
    // A custom domain is per account: either mode's headers name it; live is sent.
    const res = await client.resolveCustomDomain({}, { headers: callHeaders({ tenant: { accountId, mode: "live" }, actor: "system", requestId: "" }), timeoutMs });
    return res.domain;
  };
}

export interface PreferenceLinkBaseOptions {
  /** How long an answer is kept (default 30 s). */
  ttlMs?: number;
  /** How long "the portal did not answer" is kept before asking again (default 5 s). */
  failureTtlMs?: number;
  /** Accounts remembered at most (default 10 000; the cache is emptied past it). */
  maxEntries?: number;
  now?: () => number;
  /** Told when a lookup failed (a log line; no personal data: the account id and the error). */
  onError?: (accountId: string, err: unknown) => void;
}

/** The base URL of a tenant's preference links, per account, cached. */
export class PreferenceLinkBase {
  /** Per account: the base, and whether the portal failed to say (kept less long then). */
  private readonly cache: ExpiringCache<{ base: string; failed: boolean }>;

  constructor(
    private readonly settings: Pick<PreferenceLinkSettings, "baseUrl">,
    /** Undefined: no portal to ask (every link uses PREFERENCES_URL). */
    private readonly lookup: CustomDomainLookup | undefined,
    private readonly options: PreferenceLinkBaseOptions = {},
  ) {
    const ttlMs = options.ttlMs ?? 30_000;
    const failureTtlMs = options.failureTtlMs ?? 5_000;
    this.cache = new ExpiringCache((answer) => (answer.failed ? failureTtlMs : ttlMs), {
      maxEntries: options.maxEntries ?? 10_000,
      ...(options.now ? { now: options.now } : {}),
    });
  }

  /** `https://<active custom domain>` or PREFERENCES_URL, without a trailing slash. */
  async forAccount(accountId: string): Promise<string> {
    if (!this.lookup) return this.settings.baseUrl;
    return (await this.cache.get(accountId, () => this.ask(accountId))).base;
  }

  private async ask(accountId: string): Promise<{ base: string; failed: boolean }> {
    try {
      const domain = await this.lookup!(accountId);
      // The portal only answers domains it validated (lower-case ASCII host names); anything else is ignored.
      if (domain !== "" && /^[a-z0-9.-]{1,253}$/.test(domain)) return { base: `https://${domain}`, failed: false };
      return { base: this.settings.baseUrl, failed: false };
    } catch (err) {
      this.options.onError?.(accountId, err);
      return { base: this.settings.baseUrl, failed: true };
    }
  }
}
