import { counter } from "@emailsvc/runtime";
import type { KeyIdentity } from "../http/state.js";
import { addressBucketId } from "@emailsvc/ratelimit";
import type { RateClass, RateLimitConfig } from "./config.js";
import { onGrid, toleranceMs, type Bucket, type BucketState, type CounterStore, type Outcome, type Policy } from "@emailsvc/ratelimit";

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
 * (account and mode) for each class of operation, and per client address for
 * failed authentication. Header values follow the IETF httpapi draft
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
    const perKey = this.config.perKey[cls];
    const perTenant = this.config.perTenant[cls];
    const budgets: Array<{ budget: Budget; key: string }> = [];
    if (perKey) {
      budgets.push({
        budget: { id: `key_${cls}`, label: `${cls} per API key`, subject: "this API key", policy: perKey },
        key: `k:${identity.keyId}:${cls}`,
      });
    }
    if (perTenant) {
      budgets.push({
        budget: {
          id: `tenant_${cls}`,
          label: `${cls} per account and mode`,
          subject: `this account in ${identity.mode} mode`,
          policy: perTenant,
        },
        key: `t:${identity.accountId}:${identity.mode}:${cls}`,
      });
    }
    if (budgets.length === 0) return undefined;
    const buckets: Bucket[] = budgets.map(({ budget, key }) => ({ key, policy: budget.policy }));
    const outcome = await this.store.consume(buckets, this.now());
    return verdictOf(
      budgets.map((b) => b.budget),
      outcome,
      (budget) => `Too many ${cls} requests for ${budget.subject}: the budget is ${describe(budget.policy)}.`,
    );
  }

  /**
   * Before authenticating: a refusal when the client address has used up its
   * failure budget (the credentials are then not even looked at), else undefined.
   * Costs no I/O: this replica's view of the budget (see CounterStore.peek).
   */
  authBlocked(address: string): Verdict | undefined {
    const budget = this.authBudget();
    if (!budget) return undefined;
    const bucket = { key: authKey(address), policy: budget.policy };
    const now = this.now();
    const state = this.store.peek(bucket, now);
    if (state.remaining >= 1) return undefined;
    // The wait until one more attempt: what a charge now would be told.
    const retryAfterMs = state.resetMs - toleranceMs(budget.policy);
    return verdictOf([budget], { allowed: false, states: [state], retryAfterMs: Math.max(retryAfterMs, 0), refusedBy: [0] }, failureDetail);
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
