import { ConfigError } from "@emailsvc/runtime";
import { loadConfig } from "../src/config.js";
import { nextAttemptAt, DEFAULT_RETRY } from "../src/domain/retry.js";

// The service's settings: defaults, and a bad value stops the start naming its variable.

describe("webhooks settings", () => {
  it("defaults to https only, no private ranges, 10 s, the suggested schedule for 3 days, 5 days to disable", () => {
    expect(loadConfig({})).toEqual({
      sealingKeys: undefined,
      allowHttp: false,
      allowPrivateRanges: [],
      timeoutMs: 10_000,
      retryDelaysMs: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      retryForMs: 259_200_000,
      disableAfterMs: 432_000_000,
      logRetentionDays: 30,
      senderIntervalMs: 1000,
    });
  });

  it("reads what the operator sets", () => {
    const config = loadConfig({ WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_RANGES: "127.0.0.0/8, fd12::/16", WEBHOOK_RETRY_DELAYS_SECONDS: "1,2" });
    expect([config.allowHttp, config.allowPrivateRanges, config.retryDelaysMs]).toEqual([true, ["127.0.0.0/8", "fd12::/16"], [1000, 2000]]);
  });

  it.each([
    ["WEBHOOK_ALLOW_HTTP", "yes"],
    ["WEBHOOK_ALLOW_PRIVATE_RANGES", "127.0.0.1"],
    ["WEBHOOK_ALLOW_PRIVATE_RANGES", "10.0.0.0/33"],
    ["WEBHOOK_RETRY_DELAYS_SECONDS", "5,x"],
    ["WEBHOOK_TIMEOUT_MS", "0"],
  ])("refuses %s=%s, naming it", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});

describe("the retry schedule", () => {
  it("waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 10 h again, and gives up past 3 days", () => {
    const created = 0;
    const waits: number[] = [];
    let now = created;
    for (let attempts = 1; ; attempts++) {
      const next = nextAttemptAt(DEFAULT_RETRY, attempts, created, now);
      if (next === undefined) break;
      waits.push((next - now) / 1000);
      now = next;
    }
    expect(waits.slice(0, 8)).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000, 36000]);
    expect(now).toBeLessThanOrEqual(DEFAULT_RETRY.retryForMs);
    expect(now + 36_000_000).toBeGreaterThan(DEFAULT_RETRY.retryForMs);
  });
});
