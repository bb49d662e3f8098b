import { counter } from "@emailsvc/runtime";
import { createHash } from "node:crypto";
import type { KeyIdentity, PreferenceIdentity } from "../http/state.js";
import { addressBucketId } from "@emailsvc/ratelimit";
import type { PreferenceRateClass, RateClass, RateLimitConfig } from "./config.js";
import { onGrid, type Bucket, type BucketState, type CounterStore, type Outcome, type Policy } from "@emailsvc/ratelimit";

/** A budget a request draws from, as clients and operators read it. */
interface Budget {
  /** Metric label and stable name: `key_read`, `tenant_send`, `auth_failures`. */
  id: string;
  /** For the RateLimit-Policy comment and the 429's detail. */
  label: string;
  /** Who is counted, for the detail: "this API key". */
  subject: string;
  policy: Policy;
}

/** What a request learned from its budgets: the headers to send, and whether it may go on. */
export interface Verdict {
  allowed: boolean;
  /** RateLimit-Limit, -Remaining, -Reset, -Policy, and Retry-After when refused. */
  headers: Record<string, string>;
  /** When refused: which budget, its size, and the wait, for the problem's detail. */
  detail?: string;
}

const refusals = counter("gateway_rate_limited_total", "Requests refused with 429, by budget.", ["budget"]);

/**
 * The gateway's budgets over a counter store: per API key and per tenant
 * (account and mode) for each class of API-key operation, per subscriber and
 * per tenant for each class of preference-center operation, and per client
 * address for failed authentication. Header values follow the IETF httpapi draft
 * (draft-ietf-httpapi-ratelimit-headers-06): `RateLimit-Limit`,
 * `-Remaining` and `-Reset` (seconds until the quota is whole again) of the
 * budget closest to exhaustion, and `RateLimit-Policy` listing every budget
 * the request counted against, as `<limit>;w=<window seconds>;comment="…"`.
 */
export class RateLimiter {
  constructor(
    readonly config: RateLimitConfig,
    private readonly store: CounterStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The clock on the GCRA's time grid (gcra.ts), so that every TAT stays exact. */
  private now(): number {
    return onGrid(this.clock());
  }

  /** Charges an authenticated request to its key's and its tenant's budget of `cls`; undefined when neither is set. */
  async admit(identity: KeyIdentity, cls: RateClass): Promise<Verdict | undefined> {
    return this.charge(cls, [
      {
        budget: { id: `key_${cls}`, label: `${cls} per API key`, subject: "this API key", policy: this.config.perKey[cls] },
        key: `k:${identity.keyId}:${cls}`,
      },
      {
        budget: { id: `tenant_${cls}`, label: `${cls} per account and mode`, subject: `this account in ${identity.mode} mode`, policy: this.config.perTenant[cls] },
        key: `t:${identity.accountId}:${identity.mode}:${cls}`,
      },
    ]);
  }

  /**
   * Charges a preference-center request (preference token) to its
   * subscriber's and its tenant's preference budget of `cls`; undefined when
   * neither is set. Per subscriber, not per token: minting more links does
   * not buy more.
   */
  async admitPreference(identity: PreferenceIdentity, cls: PreferenceRateClass): Promise<Verdict | undefined> {
    return this.charge(cls, [
      {
        budget: { id: `subscriber_${cls}`, label: `${cls} per subscriber`, subject: "this subscriber", policy: this.config.perSubscriber[cls] },
        // Hashed: the shared store holds no subscriber id (it outlives an erasure until the bucket is full again).
        key: `s:${bucketId(`${identity.accountId}:${identity.mode}:${identity.subscriberId}`)}:${cls}`,
      },
      {
        budget: {
          id: `tenant_preference_${cls}`,
          label: `preference ${cls} per account and mode`,
          subject: `this account's preference center in ${identity.mode} mode`,
          policy: this.config.perTenantPreference[cls],
        },
        key: `tp:${identity.accountId}:${identity.mode}:${cls}`,
      },
    ]);
  }

  /** Charges one request to every budget that is set (all or none). */
  private async charge(cls: string, candidates: Array<{ budget: Omit<Budget, "policy"> & { policy: Policy | null }; key: string }>): Promise<Verdict | undefined> {
    const budgets = candidates.filter((c): c is { budget: Budget; key: string } => c.budget.policy !== null);
    if (budgets.length === 0) return undefined;
    const buckets: Bucket[] = budgets.map(({ budget, key }) => ({ key, policy: budget.policy }));
    const outcome = await this.store.consume(buckets, this.now());
    return verdictOf(
      budgets.map((b) => b.budget),
      outcome,
      (budget) => `Too many ${cls} requests for ${budget.subject}: the budget is ${describe(budget.policy)}.`,
    );
  }

  /** After a failed authentication: charges the address; refused when its budget was already used up. */
  async authFailed(address: string): Promise<Verdict | undefined> {
    const budget = this.authBudget();
    if (!budget) return undefined;
    const outcome = await this.store.consume([{ key: authKey(address), policy: budget.policy }], this.now());
    return verdictOf([budget], outcome, failureDetail);
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private authBudget(): Budget | undefined {
    const policy = this.config.authFailures;
    return policy
      ? { id: "auth_failures", label: "failed authentication per client address", subject: "this address", policy }
      : undefined;
  }
}

/** A counter's name for an id that should not be stored as it is. */
function bucketId(text: string): string {
  return createHash("sha256").update(text).digest("base64url").slice(0, 22);
}

function authKey(address: string): string {
  return `a:${addressBucketId(address)}`;
}

const failureDetail = (budget: Budget) =>
  `Too many failed authentication attempts from ${budget.subject}: the budget is ${describe(budget.policy)}.`;

/** "100 per 1 s". */
function describe(policy: Policy): string {
  return `${policy.limit} per ${policy.windowMs / 1000} s`;
}

function verdictOf(budgets: Budget[], outcome: Outcome, detail: (budget: Budget) => string): Verdict {
  // The budget to show: the one that refused (the longest wait), else the
  // one closest to exhaustion (the fewest left, then the longest until whole).
  let shown = 0;
  if (!outcome.allowed) {
    shown = outcome.refusedBy[0]!;
  } else {
    outcome.states.forEach((state, i) => {
      const best = outcome.states[shown]!;
      if (state.remaining < best.remaining || (state.remaining === best.remaining && state.resetMs > best.resetMs)) shown = i;
    });
  }
  const state: BucketState = outcome.states[shown]!;
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(state.limit),
    "RateLimit-Remaining": String(state.remaining),
    "RateLimit-Reset": String(Math.ceil(state.resetMs / 1000 - 1e-9)),
    "RateLimit-Policy": budgets
      .map((b) => `${b.policy.limit};w=${b.policy.windowMs / 1000};comment="${b.label}"`)
      .join(", "),
  };
  if (outcome.allowed) return { allowed: true, headers };
  const budget = budgets[shown]!;
  refusals.inc({ budget: budget.id });
  // Whole seconds, rounded up, at least 1: retrying then is admitted (unless others spent it first).
  const retryAfter = Math.max(1, Math.ceil(outcome.retryAfterMs / 1000 - 1e-9));
  headers["Retry-After"] = String(retryAfter);
  return { allowed: false, headers, detail: `${detail(budget)} Retry in ${retryAfter} s.` };
}
