import { counter } from "@emailsvc/telemetry";
import type { KeyIdentity } from "../http/state.js";
import { addressBucketId, bucketKey, chargeBudgets, describePolicy, emissionMs, spanMs, type CounterStore, type Policy, type Verdict } from "@emailsvc/ratelimit";
import type { RateClass, RateLimitConfig } from "./config.js";

export type { Verdict } from "@emailsvc/ratelimit";

const refusals = counter("gateway_rate_limited_total", "Requests refused with 429, by budget.", ["budget"]);

/**
 * The gateway's budgets over a counter store: per API key and per tenant
 * (account and mode) for each class of API-key operation, per client address
 * for failed authentication, and per client address and per link for the
 * one-click unsubscribe. Answers as @emailsvc/ratelimit words them
 * (budgets.ts: RateLimit headers of the budget closest to exhaustion,
 * Retry-After and a detail naming the budget when refused). The
 * preference-center budgets are the portal's, which serves the same
 * subscriber through the gateway's API and through its own page.
 */
export class RateLimiter {
  constructor(
    readonly config: RateLimitConfig,
    private readonly store: CounterStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * The largest cost one request of `cls` can ever be admitted with: the
   * smallest limit of its budgets that are set (a bucket holds no more);
   * undefined when none is set.
   */
  largestCost(cls: RateClass): number | undefined {
    const limits = [this.config.perKey[cls], this.config.perTenant[cls]].flatMap((policy) => (policy ? [policy.limit] : []));
    return limits.length > 0 ? Math.min(...limits) : undefined;
  }

  /**
   * Charges an authenticated request to its key's and its tenant's budget of
   * `cls` (`cost` requests: a batch send counts its messages); undefined when
   * neither is set.
   */
  async admit(identity: KeyIdentity, cls: RateClass, cost = 1): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [
          {
            // A member's session has the budgets of a key of its own.
            budget: identity.member
              ? { id: `member_${cls}`, label: `${cls} per member`, subject: "this member", policy: this.config.perKey[cls] }
              : { id: `key_${cls}`, label: `${cls} per API key`, subject: "this API key", policy: this.config.perKey[cls] },
            key: identity.member ? `m:${identity.member.id}:${cls}` : `k:${identity.keyId}:${cls}`,
          },
          {
            budget: { id: `tenant_${cls}`, label: `${cls} per account and mode`, subject: `this account in ${identity.mode} mode`, policy: this.config.perTenant[cls] },
            key: `t:${identity.accountId}:${identity.mode}:${cls}`,
          },
        ],
        this.clock(),
        (budget) =>
          cost === 1
            ? `Too many ${cls} requests for ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`
            : `Too many ${cls} requests for ${budget.subject}: this one counts ${cost}, the budget is ${describePolicy(budget.policy)}.`,
        cost,
      ),
    );
  }

  /** Charges a request to /unsubscribe (the page or the one-click POST) to its client address; undefined when the budget is off. */
  async admitUnsubscribe(address: string): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [
          {
            budget: { id: "unsubscribe_address", label: "unsubscribe per client address", subject: "this address", policy: this.config.unsubscribePerAddress },
            key: `u:${addressBucketId(address)}`,
          },
        ],
        this.clock(),
        (budget) => `Too many unsubscribe requests from ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      ),
    );
  }

  /**
   * Charges a one-click POST to its link: `link` names the tenant and the
   * subscriber (or the email) the token is for, and is hashed, so that the
   * counters hold no id that outlives an erasure. Undefined when the budget is off.
   */
  async admitOneClick(link: string): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [{ budget: { id: "unsubscribe_link", label: "one-click per link", subject: "this link", policy: this.config.unsubscribePerLink }, key: `ul:${bucketKey(link)}` }],
        this.clock(),
        (budget) => `Too many one-click requests for ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      ),
    );
  }

  /** Charges a post to a provider's notification route to its client address; undefined when the budget is off. */
  async admitProviderNotification(address: string): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [
          {
            budget: {
              id: "provider_notifications",
              label: "provider notifications per client address",
              subject: "this address",
              policy: this.config.providerNotificationsPerAddress,
            },
            key: `pn:${addressBucketId(address)}`,
          },
        ],
        this.clock(),
        (budget) => `Too many provider notifications from ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      ),
    );
  }

  /** After a failed authentication: charges the address; refused when its budget was already used up. */
  async authFailed(address: string): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [
          {
            budget: { id: "auth_failures", label: "failed authentication per client address", subject: "this address", policy: this.config.authFailures },
            key: `a:${addressBucketId(address)}`,
          },
        ],
        this.clock(),
        (budget) => `Too many failed authentication attempts from ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      ),
    );
  }

  /**
   * Whether sign-in for an address is locked: its budget of failures
   * (RATE_LIMIT_SIGN_IN_FAILURES) spent, as this process sees it. A locked
   * address is refused even with the right password, so that guessing stops
   * there; the verdict's headers say when to retry. Undefined: not locked.
   */
  signInLocked(email: string): Verdict | undefined {
    return this.locked(this.config.signInFailures, signInKey(email), "sign_in_failures", "failed sign-in per email address", "failed sign-in attempts for this email address");
  }

  /** Whether the client address has spent its failed-authentication budget (as this process sees it); undefined: not. */
  authLocked(address: string): Verdict | undefined {
    return this.locked(this.config.authFailures, `a:${addressBucketId(address)}`, "auth_failures", "failed authentication per client address", "failed authentication attempts from this address");
  }

  private locked(policy: Policy | null, key: string, id: string, label: string, what: string): Verdict | undefined {
    if (!policy) return undefined;
    const state = this.store.peek({ key, policy }, this.clock());
    if (state.remaining > 0) return undefined;
    // One more is admitted an emission interval after the bucket ran dry; the TAT is that far ahead at most.
    const retryAfter = Math.max(1, Math.ceil((state.resetMs - spanMs(policy) + emissionMs(policy)) / 1000));
    refusals.inc({ budget: id });
    return {
      allowed: false,
      headers: {
        "RateLimit-Limit": String(state.limit),
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": String(Math.ceil(state.resetMs / 1000)),
        "RateLimit-Policy": `${policy.limit};w=${policy.windowMs / 1000};comment="${label}"`,
        "Retry-After": String(retryAfter),
      },
      detail: `Too many ${what}: the budget is ${describePolicy(policy)}. Retry in ${retryAfter} s.`,
      refusedBy: id,
    };
  }

  /** After a failed sign-in: charges the address's budget of failures (hashed: the counter holds no address). */
  async signInFailed(email: string): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [{ budget: { id: "sign_in_failures", label: "failed sign-in per email address", subject: "this email address", policy: this.config.signInFailures }, key: signInKey(email) }],
        this.clock(),
        (budget) => `Too many failed sign-in attempts for ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      ),
    );
  }

  /** A password reset asked for: charged to the client address and to the email address; refused when either is spent. */
  async admitPasswordReset(address: string, email: string): Promise<Verdict | undefined> {
    return this.counted(
      await chargeBudgets(
        this.store,
        [
          { budget: { id: "password_reset_address", label: "password resets per client address", subject: "this address", policy: this.config.passwordResetsPerAddress }, key: `pra:${addressBucketId(address)}` },
          { budget: { id: "password_reset_email", label: "password resets per email address", subject: "this email address", policy: this.config.passwordResetsPerEmail }, key: `pre:${bucketKey(email)}` },
        ],
        this.clock(),
        (budget) => `Too many password resets for ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      ),
    );
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private counted(verdict: Verdict | undefined): Verdict | undefined {
    if (verdict?.refusedBy) refusals.inc({ budget: verdict.refusedBy });
    return verdict;
  }
}

/** The counter of an address's failed sign-ins: hashed, lower-cased. */
function signInKey(email: string): string {
  return `si:${bucketKey(email.trim().toLowerCase())}`;
}
