import { bucketKey, chargeBudgets, describePolicy, type CounterStore, type Policy, type PreferenceRateClass } from "@emailsvc/ratelimit";
import { AppError } from "@emailsvc/errors";
import { counter } from "@emailsvc/telemetry";
import { type CallContext } from "@emailsvc/tenancy";

// A subscriber's own requests, budgeted where both of their doors meet: the
// gateway's preference-center API (a preference token) and the portal page
// (a page session) call the same use cases, which charge these budgets
// first. Counted per subscriber (all their tokens and sessions together, so
// minting links buys nothing) and per tenant (all its subscribers), by class:
// `read` (a page load), `write` (a click), `privacy` (the export and the
// erasure, which read every service's part or end everything). Issue 16,
// defect 6 and its review: 300 exports in 1.45 s through the API, then 30
// through the page in 1 s once the API had a budget and the page none.

export interface PreferenceBudgetConfig {
  /** RATE_LIMIT_PREFERENCE_READ, _WRITE, _PRIVACY: per subscriber; null when "off". */
  perSubscriber: Record<PreferenceRateClass, Policy | null>;
  /** RATE_LIMIT_TENANT_PREFERENCE_READ, _WRITE, _PRIVACY: per account and mode, all its subscribers together. */
  perTenant: Record<PreferenceRateClass, Policy | null>;
}

/** Who is charged: the tenant of the call and the subscriber it acts on. */
export interface Charged {
  call: CallContext;
  subscriberId: string;
  /**
   * Where the RateLimit headers of an admitted request go (the gRPC
   * response metadata the gateway passes on); the page has no use for them.
   */
  rateLimitHeaders?: (headers: Record<string, string>) => void;
}

/** Charges a request of `cls`; a spent budget is AppError `rate_limited` (RESOURCE_EXHAUSTED) carrying Retry-After and the RateLimit headers. */
export interface PreferenceBudgets {
  charge(who: Charged, cls: PreferenceRateClass): Promise<void>;
}

/** RATE_LIMIT=off: nothing is counted. */
export const UNLIMITED: PreferenceBudgets = { charge: async () => undefined };

const refusals = counter("portal_rate_limited_total", "Preference-center requests (API and page) refused, by budget.", ["budget"]);

export function preferenceBudgets(config: PreferenceBudgetConfig, store: CounterStore, clock: () => number = Date.now): PreferenceBudgets {
  return {
    async charge(who, cls) {
      const { accountId, mode } = who.call.tenant;
      const verdict = await chargeBudgets(
        store,
        [
          {
            budget: { id: `subscriber_${cls}`, label: `${cls} per subscriber`, subject: "this subscriber", policy: config.perSubscriber[cls] },
            // Hashed: a shared store holds no subscriber id (it outlives an erasure until the bucket is full again).
            key: `s:${bucketKey(`${accountId}:${mode}:${who.subscriberId}`)}:${cls}`,
          },
          {
            budget: {
              id: `tenant_preference_${cls}`,
              label: `preference ${cls} per account and mode`,
              subject: `this account's preference center in ${mode} mode`,
              policy: config.perTenant[cls],
            },
            key: `tp:${accountId}:${mode}:${cls}`,
          },
        ],
        clock(),
        (budget) => `Too many ${cls} requests for ${budget.subject}: the budget is ${describePolicy(budget.policy)}.`,
      );
      if (!verdict) return;
      // Lower case: gRPC metadata names (and HTTP/2's) are.
      const headers = Object.fromEntries(Object.entries(verdict.headers).map(([name, value]) => [name.toLowerCase(), value]));
      if (!verdict.allowed) {
        refusals.inc({ budget: verdict.refusedBy ?? "" });
        throw new AppError("rate_limited", "rate_limited", verdict.detail ?? "Too many requests.", { metadata: headers });
      }
      who.rateLimitHeaders?.(headers);
    },
  };
}

/** The Retry-After of a refusal (whole seconds), for a page to send. */
export function retryAfterOf(err: AppError): string | undefined {
  return err.extra.metadata?.["retry-after"];
}
