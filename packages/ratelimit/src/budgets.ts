import { createHash } from "node:crypto";
import { onGrid, type Bucket, type BucketState, type Policy } from "./gcra.js";
import type { CounterStore, Outcome } from "./store.js";

// Budgets as clients and operators read them, and the answer a request gets
// from them: the RateLimit headers of the IETF httpapi draft
// (draft-ietf-httpapi-ratelimit-headers-06) and, when refused, Retry-After and
// a detail naming the budget. One implementation for every service that
// limits requests (the gateway's API keys and one-click links, the portal's
// preference budgets), so that a client reads every refusal alike.

/** A budget a request draws from. */
export interface Budget {
  /** Metric label and stable name: `key_read`, `subscriber_privacy`, `auth_failures`. */
  id: string;
  /** For the RateLimit-Policy comment: "read per API key". */
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
  /** When refused: which budget, its size, and the wait. */
  detail?: string;
  /** When refused: the id of the budget that refused (a metric label). */
  refusedBy?: string;
}

/** The response headers a Verdict sets, in lower case (as gRPC metadata and Node's headers carry them). */
export const RATE_LIMIT_HEADER_NAMES = ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "ratelimit-policy", "retry-after"] as const;

/** A candidate budget of a request: left out when its policy is null ("off"). */
export interface Charge {
  budget: Omit<Budget, "policy"> & { policy: Policy | null };
  /** The counter's key: ids only, never personal data (bucketKey hashes what must not be stored). */
  key: string;
}

/**
 * Charges one request to every budget that is set (all or none) on the
 * store's clock `now`; undefined when none is set. `refusal` words the detail
 * of the budget that refused. `cost` is what the request counts for (a batch
 * of messages counts one per message); at most each budget's limit.
 */
export async function chargeBudgets(
  store: CounterStore,
  charges: readonly Charge[],
  now: number,
  refusal: (budget: Budget) => string,
  cost = 1,
): Promise<Verdict | undefined> {
  const budgets = charges.filter((c): c is { budget: Budget; key: string } => c.budget.policy !== null);
  if (budgets.length === 0) return undefined;
  const buckets: Bucket[] = budgets.map(({ budget, key }) => ({ key, policy: budget.policy, ...(cost !== 1 ? { cost } : {}) }));
  // On the GCRA's time grid (gcra.ts), so that every TAT stays exact.
  const outcome = await store.consume(buckets, onGrid(now));
  return verdictOf(
    budgets.map((b) => b.budget),
    outcome,
    refusal,
  );
}

/** A counter's name for an id that should not be stored as it is (a subscriber id outlives its erasure in a counter). */
export function bucketKey(text: string): string {
  return createHash("sha256").update(text).digest("base64url").slice(0, 22);
}

/** "100 per 1 s". */
export function describePolicy(policy: Policy): string {
  return `${policy.limit} per ${policy.windowMs / 1000} s`;
}

/** The headers and detail of an outcome against its budgets (in the order charged). */
export function verdictOf(budgets: readonly Budget[], outcome: Outcome, refusal: (budget: Budget) => string): Verdict {
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
    "RateLimit-Policy": budgets.map((b) => `${b.policy.limit};w=${b.policy.windowMs / 1000};comment="${b.label}"`).join(", "),
  };
  if (outcome.allowed) return { allowed: true, headers };
  const budget = budgets[shown]!;
  // Whole seconds, rounded up, at least 1: retrying then is admitted (unless others spent it first).
  const retryAfter = Math.max(1, Math.ceil(outcome.retryAfterMs / 1000 - 1e-9));
  headers["Retry-After"] = String(retryAfter);
  return { allowed: false, headers, detail: `${refusal(budget)} Retry in ${retryAfter} s.`, refusedBy: budget.id };
}
