import { AppError } from "@emailsvc/errors";
import { verdictOf, type Budget } from "./budgets.js";
import type { Bucket } from "./gcra.js";
import type { CounterStore } from "./store.js";

// The test-mode quota (issue 16, defect 2): test keys never deliver, but what
// they send is rendered and kept by the sandbox, so they are no free,
// unlimited workload either. Each account may send TEST_MODE_DAILY_LIMIT
// messages in test mode in any 24 hours: delivery counts its sends (the REST
// send, triggers, the portal's link mail) with testModeQuota, campaigns its
// campaigns' recipients as its dispatcher hands them to delivery (the bucket
// below among its sending budgets, so a campaign over the quota waits as one
// over CAMPAIGN_DAILY_LIMIT does), each in its own store (so the limit holds
// across restarts and replicas). A GCRA budget of `limit` per 24 h: the whole
// day's quota at once, then one more message every 24 h / limit, never a
// window's edge.

const DAY_MS = 24 * 3_600_000;

export interface TestModeQuota {
  /** The messages a tenant may send in test mode in any 24 hours. */
  readonly limit: number;
  /**
   * Charges `count` messages to a test-mode tenant (`acc_…:test`); a
   * live-mode tenant is not counted. Throws AppError: `rate_limited`
   * `test_mode_quota_exceeded` with the seconds until they fit, or `forbidden`
   * `test_mode_campaign_too_large` when they never fit in one day.
   */
  charge(tenant: string, count?: number): Promise<void>;
  /** Gives back a charge of `count` that turned out not to be needed (a concurrent duplicate of an idempotent send). */
  refund(tenant: string, count?: number): Promise<void>;
}

/**
 * 403 `test_mode_campaign_too_large` when `count` messages can never fit in
 * one day's quota of `limit`: the one refusal that no waiting cures.
 */
export function checkTestModeSize(limit: number, count: number): void {
  if (count <= limit) return;
  throw new AppError(
    "forbidden",
    "test_mode_campaign_too_large",
    `test mode sends at most ${limit} messages a day per account (TEST_MODE_DAILY_LIMIT); this would send ${count}: use a smaller audience or a live key`,
  );
}

/** The bucket of an account's test-mode messages in any 24 hours (`tenant` is `acc_…:test`), in the counter store of whoever charges it. */
export function testModeBucket(tenant: string, limit: number, cost = 1): Bucket {
  return { key: `test-mode-day:${tenant}`, policy: { limit, windowMs: DAY_MS }, cost };
}

/** A test-mode quota counted in `store` (a DocumentCounterStore in the service's database). */
export function testModeQuota(store: CounterStore, limit: number, clock: () => number = Date.now): TestModeQuota {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("the test-mode daily limit must be a positive integer");
  const budget: Budget = { id: "test_mode_day", label: "test-mode messages per account", subject: "this account in test mode", policy: testModeBucket("", limit).policy };
  return {
    limit,
    async charge(tenant, count = 1) {
      if (!tenant.endsWith(":test") || count <= 0) return;
      checkTestModeSize(limit, count);
      const outcome = await store.consume([testModeBucket(tenant, limit, count)], clock());
      if (outcome.allowed) return;
      // The refusal carries the quota's own RateLimit headers with its
      // Retry-After (lower case, as gRPC metadata), which the gateway answers
      // instead of the API key's: a client paces by the budget that refused.
      const verdict = verdictOf([budget], outcome, () => "");
      const metadata = Object.fromEntries(Object.entries(verdict.headers).map(([name, value]) => [name.toLowerCase(), value]));
      const remaining = outcome.states[0]?.remaining ?? 0;
      throw new AppError(
        "rate_limited",
        "test_mode_quota_exceeded",
        `test mode sends at most ${limit} messages a day per account (TEST_MODE_DAILY_LIMIT); ${remaining} may go now, ${count} would in ${metadata["retry-after"]} s`,
        { metadata },
      );
    },
    async refund(tenant, count = 1) {
      if (!tenant.endsWith(":test") || count <= 0) return;
      await store.refund(testModeBucket(tenant, limit, count), clock());
    },
  };
}

/** TEST_MODE_DAILY_LIMIT as set: a positive integer, or `off` (null: no quota). Throws a RangeError naming what is wrong. */
export function parseTestModeDailyLimit(raw: string | undefined, fallback: number): number | null {
  if (raw === undefined || raw.trim() === "") return fallback;
  if (raw.trim().toLowerCase() === "off") return null;
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < 1 || value > 100_000_000) {
    throw new RangeError(`TEST_MODE_DAILY_LIMIT must be a number of messages (1 to 100,000,000) or "off", got "${raw}"`);
  }
  return value;
}

/** Default of TEST_MODE_DAILY_LIMIT: messages per account in test mode in any 24 hours. */
export const DEFAULT_TEST_MODE_DAILY_LIMIT = 10_000;
