import { AppError } from "@emailsvc/errors";
import { MemoryCounterStore, parseTestModeDailyLimit, testModeQuota } from "../src/index";

// The test-mode quota's rules (pure logic on the memory store): a day's
// budget per test-mode tenant, refused with a retry time, more than a whole
// day refused for good, live mode never counted.

const DAY_MS = 24 * 3_600_000;

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("testModeQuota", () => {
  let now = Date.UTC(2026, 10, 1);
  const quota = () => testModeQuota(new MemoryCounterStore(), 10, () => now);

  it("admits a day's quota per test-mode tenant, then refuses with the seconds until one more fits", async () => {
    const q = quota();
    for (let i = 0; i < 10; i += 1) await q.charge("acc_a:test");
    const refused = await refusal(q.charge("acc_a:test"));
    expect(refused).toMatchObject({ kind: "rate_limited", code: "test_mode_quota_exceeded" });
    // One message comes back every 24 h / 10.
    expect(refused.extra.metadata?.["retry-after"]).toBe(String(DAY_MS / 10 / 1000));
    // With the quota's own RateLimit headers, which the gateway answers instead of the API key's.
    expect(refused.extra.metadata).toEqual({
      "retry-after": "8640",
      "ratelimit-limit": "10",
      "ratelimit-remaining": "0",
      "ratelimit-reset": "86400",
      "ratelimit-policy": '10;w=86400;comment="test-mode messages per account"',
    });
    // Another account, and live mode, are not touched.
    await q.charge("acc_b:test", 10);
    for (let i = 0; i < 50; i += 1) await q.charge("acc_a:live");
    now += DAY_MS / 10;
    await q.charge("acc_a:test");
  });

  it("gives back a charge that was not needed (a concurrent duplicate of an idempotent send)", async () => {
    const q = quota();
    for (let i = 0; i < 10; i += 1) await q.charge("acc_e:test");
    await q.refund("acc_e:test");
    await q.charge("acc_e:test");
    expect((await refusal(q.charge("acc_e:test"))).code).toBe("test_mode_quota_exceeded");
    // Live mode is never counted, so nothing is given back to it either.
    await q.refund("acc_e:live");
    expect((await refusal(q.charge("acc_e:test"))).code).toBe("test_mode_quota_exceeded");
  });

  it("charges several messages at once: refused whole when they do not fit, never half", async () => {
    const q = quota();
    await q.charge("acc_c:test", 7);
    const refused = await refusal(q.charge("acc_c:test", 4));
    expect(refused.code).toBe("test_mode_quota_exceeded");
    await q.charge("acc_c:test", 3);
  });

  it("refuses more than a whole day's quota for good (403 test_mode_campaign_too_large)", async () => {
    const refused = await refusal(quota().charge("acc_d:test", 11));
    expect(refused).toMatchObject({ kind: "forbidden", code: "test_mode_campaign_too_large" });
    expect(refused.extra.metadata).toBeUndefined();
  });

  it("reads TEST_MODE_DAILY_LIMIT: a number, off, or the default", () => {
    expect(parseTestModeDailyLimit(undefined, 10_000)).toBe(10_000);
    expect(parseTestModeDailyLimit("250", 10_000)).toBe(250);
    expect(parseTestModeDailyLimit("off", 10_000)).toBeNull();
    expect(() => parseTestModeDailyLimit("0", 10_000)).toThrow(/TEST_MODE_DAILY_LIMIT/);
    expect(() => parseTestModeDailyLimit("lots", 10_000)).toThrow(/TEST_MODE_DAILY_LIMIT/);
  });
});
