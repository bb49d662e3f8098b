// The budgets of a subscriber's own requests (usecases/budgets.ts), which the
// portal charges for its REST API (through the gateway) and its page alike:
// per subscriber and per tenant, by class, with the answer every client of
// the platform reads (RateLimit headers, Retry-After, a detail naming the
// budget). The clock is moved by hand; end to end through both doors:
// embedded/test/rate-limit.test.ts.

import { MemoryCounterStore } from "@emailsvc/ratelimit";
import { AppError } from "@emailsvc/errors";
import { ConfigError } from "@emailsvc/runtime";
import { type CallContext } from "@emailsvc/tenancy";
import { loadPreferenceRateLimits } from "../src/config";
import { preferenceBudgets, type Charged } from "../src/usecases/budgets";

const T0 = 1_700_000_000_000;
const call = (accountId: string): CallContext => ({ tenant: { accountId, mode: "test" }, actor: "portal", requestId: "" });

describe("preference budgets", () => {
  let now = T0;
  const config = loadPreferenceRateLimits({ RATE_LIMIT_PREFERENCE_PRIVACY: "2/1h", RATE_LIMIT_TENANT_PREFERENCE_PRIVACY: "3/1h", RATE_LIMIT_PREFERENCE_READ: "3/60s" });
  const budgets = preferenceBudgets(config, new MemoryCounterStore(), () => now);
  const who = (subscriberId: string, accountId = "acc_1", headers?: Record<string, string>): Charged => ({
    call: call(accountId),
    subscriberId,
    rateLimitHeaders: headers ? (h) => Object.assign(headers, h) : undefined,
  });
  const refusal = async (charge: Promise<void>): Promise<AppError> => {
    try {
      await charge;
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
    throw new Error("expected a refusal");
  };

  it("admits a subscriber's privacy requests up to the budget, telling what is left, then refuses with Retry-After", async () => {
    const headers: Record<string, string> = {};
    await budgets.charge(who("sub_1", "acc_1", headers), "privacy");
    expect(headers).toEqual({
      "ratelimit-limit": "2",
      "ratelimit-remaining": "1",
      "ratelimit-reset": "1800",
      "ratelimit-policy": '2;w=3600;comment="privacy per subscriber", 3;w=3600;comment="preference privacy per account and mode"',
    });
    await budgets.charge(who("sub_1"), "privacy");
    const refused = await refusal(budgets.charge(who("sub_1"), "privacy"));
    expect({ kind: refused.kind, code: refused.code, message: refused.message }).toEqual({
      kind: "rate_limited",
      code: "rate_limited",
      message: "Too many privacy requests for this subscriber: the budget is 2 per 3600 s. Retry in 1800 s.",
    });
    expect(refused.extra.metadata).toMatchObject({ "retry-after": "1800", "ratelimit-remaining": "0" });
    // Another class is a budget of its own.
    await budgets.charge(who("sub_1"), "read");
  });

  it("counts a tenant's subscribers together, and another tenant apart; recovers with time", async () => {
    await budgets.charge(who("sub_2"), "privacy");
    const refused = await refusal(budgets.charge(who("sub_3"), "privacy"));
    expect(refused.message).toMatch(/^Too many privacy requests for this account's preference center in test mode: the budget is 3 per 3600 s\./);
    await budgets.charge(who("sub_3", "acc_2"), "privacy");
    now = T0 + 3_600_000;
    await budgets.charge(who("sub_3"), "privacy");
  });

  it("refuses nothing when RATE_LIMIT=off, and names a misspelt budget at start", () => {
    expect(loadPreferenceRateLimits({ RATE_LIMIT: "off" }).enabled).toBe(false);
    expect(() => loadPreferenceRateLimits({ RATE_LIMIT_PREFERENCE_EXPORT: "1/1h" })).toThrow(ConfigError);
    expect(() => loadPreferenceRateLimits({ RATE_LIMIT_PREFERENCE_EXPORT: "1/1h" })).toThrow(/unknown environment variable RATE_LIMIT_PREFERENCE_EXPORT/);
    expect(() => loadPreferenceRateLimits({ RATE_LIMIT_PREFERENCE_PRIVACY: "5 an hour" })).toThrow(/RATE_LIMIT_PREFERENCE_PRIVACY must be "<requests>\/<window>"/);
  });

  it("stops the export floods of issue 16 (300 in 1.45 s through the API, 30 in 1 s through the page) with the defaults", () => {
    const defaults = loadPreferenceRateLimits({});
    expect(defaults).toEqual({
      enabled: true,
      perSubscriber: { read: { limit: 60, windowMs: 60_000 }, write: { limit: 30, windowMs: 60_000 }, privacy: { limit: 5, windowMs: 3_600_000 } },
      perTenant: { read: { limit: 100, windowMs: 1000 }, write: { limit: 50, windowMs: 1000 }, privacy: { limit: 20, windowMs: 60_000 } },
      store: "memory",
      storeTimeoutMs: 250,
      maxKeys: 100_000,
    });
    const inSpan = (p: { limit: number; windowMs: number } | null, ms: number) => p!.limit + (ms * p!.limit) / p!.windowMs;
    // One subscriber: a handful, then a few an hour, by both doors together; a tenant's subscribers together: bounded too.
    expect(inSpan(defaults.perSubscriber.privacy, 1450)).toBeLessThan(6);
    expect(inSpan(defaults.perSubscriber.privacy, 3_600_000)).toBeLessThanOrEqual(10);
    expect(inSpan(defaults.perTenant.privacy, 1450)).toBeLessThan(300 / 10);
  });
});
