import { tenantOfKey } from "@emailsvc/tenancy";
import { signToken, type KeyRing } from "@emailsvc/tokens";

// The one-click unsubscribe link of a marketing email (RFC 8058): the
// gateway's /unsubscribe with a signed token naming the tenant, the email and,
// when the recipient is one, the subscriber. Ids only: the link sits in a
// mailbox and in proxy logs. The gateway verifies it with the same keys
// (TOKEN_SIGNING_KEYS) and unsubscribes on POST.

/** What a link is minted for. */
export interface UnsubscribeTarget {
  tenant: string;
  emailId: string;
  /** The recipient's subscriber, when the recipient is one. */
  subscriberId?: string | undefined;
  /** The campaign the email belongs to, if any. */
  campaignId?: string | undefined;
}

/** The link of one email, or undefined when the platform mints none. */
export type UnsubscribeUrlSource = (target: UnsubscribeTarget) => string | undefined;

/** Where the gateway is when PUBLIC_API_URL is not set (`npm start`'s default port). */
export const DEFAULT_PUBLIC_API_URL = "http://localhost:8080";

/** Links stay valid this long by default: people unsubscribe from old mail too. */
export const DEFAULT_UNSUBSCRIBE_TTL_DAYS = 365;

export function unsubscribeLinks(options: { keys: KeyRing; publicApiUrl: string; ttlDays?: number; now?: () => number }): UnsubscribeUrlSource {
  const base = `${options.publicApiUrl.replace(/\/+$/, "")}/unsubscribe?token=`;
  const ttlSeconds = (options.ttlDays ?? DEFAULT_UNSUBSCRIBE_TTL_DAYS) * 24 * 60 * 60;
  const noClock = { ttlSeconds };
  return ({ tenant, emailId, subscriberId, campaignId }) => {
    const { accountId, mode } = tenantOfKey(tenant);
    const token = signToken(
      options.keys,
      { purpose: "unsubscribe", accountId, mode, emailId, subscriberId, campaignId: campaignId || undefined },
      options.now ? { ttlSeconds, now: options.now() } : noClock,
    );
    return base + token;
  };
}
