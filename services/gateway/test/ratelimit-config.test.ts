// Rate-limit settings from the environment, and the client address the
// failure budget counts.

import { ConfigError } from "@emailsvc/runtime";
import { addressBucketId, addressUnit, clientAddress } from "@emailsvc/ratelimit";
import { adminTokenFromEnv } from "../src/config";
import { formatPolicy, loadRateLimitConfig, parsePolicy } from "../src/ratelimit/config";

describe("parsePolicy", () => {
  it.each([
    ["300/60s", { limit: 300, windowMs: 60_000 }],
    ["20/1s", { limit: 20, windowMs: 1000 }],
    ["5/s", { limit: 5, windowMs: 1000 }],
    ["1000/1h", { limit: 1000, windowMs: 3_600_000 }],
    ["10/5m", { limit: 10, windowMs: 300_000 }],
    [" 7 / 2 S ", { limit: 7, windowMs: 2000 }],
    ["1/24h", { limit: 1, windowMs: 86_400_000 }],
  ])("reads %j", (text, policy) => {
    expect(parsePolicy(text)).toEqual(policy);
  });

  it("reads off as no budget", () => {
    expect(parsePolicy("off")).toBeNull();
    expect(parsePolicy("OFF")).toBeNull();
  });

  it.each(["", "300", "300/", "/60s", "300/60", "300/60ms", "300/1.5s", "-1/1s", "0/1s", "1e3/1s", "2000000/1s", "1/25h", "1/0s", "ten/1s"])(
    "refuses %j",
    (text) => {
      expect(() => parsePolicy(text)).toThrow(RangeError);
    },
  );

  it("formats back", () => {
    expect(["100/1s", "300/60s", "20/1h", "7/90s"].map((t) => formatPolicy(parsePolicy(t)))).toEqual(["100/1s", "300/1m", "20/1h", "7/90s"]);
    expect(formatPolicy(null)).toBe("off");
  });
});

describe("loadRateLimitConfig", () => {
  it("defaults: on, in memory, per key, per tenant, per address, and the one-click link's", () => {
    const config = loadRateLimitConfig({});
    expect(config).toEqual({
      enabled: true,
      perKey: { read: { limit: 100, windowMs: 1000 }, write: { limit: 50, windowMs: 1000 }, send: { limit: 500, windowMs: 25_000 } },
      perTenant: { read: { limit: 200, windowMs: 1000 }, write: { limit: 100, windowMs: 1000 }, send: { limit: 1000, windowMs: 25_000 } },
      authFailures: { limit: 20, windowMs: 60_000 },
      unsubscribePerAddress: { limit: 300, windowMs: 60_000 },
      unsubscribePerLink: { limit: 5, windowMs: 60_000 },
      providerNotificationsPerAddress: { limit: 600, windowMs: 60_000 },
      signInFailures: { limit: 10, windowMs: 900_000 },
      passwordResetsPerAddress: { limit: 20, windowMs: 3_600_000 },
      passwordResetsPerEmail: { limit: 5, windowMs: 3_600_000 },
      store: "memory",
      storeTimeoutMs: 250,
      maxKeys: 100_000,
      trustedProxyHops: 0,
    });
  });

  it("stops the abuse of issue 6 within ten seconds with the defaults", () => {
    const config = loadRateLimitConfig({});
    // Most a budget admits over 10 s: the limit at once, then limit per window.
    const in10s = (p: { limit: number; windowMs: number } | null) => p!.limit + (10_000 * p!.limit) / p!.windowMs;
    expect(in10s(config.perKey.read)).toBeLessThan(2000);
    expect(in10s(config.authFailures)).toBeLessThan(2000 / 10);
    // Sends: a full batch of 500 fits at once (issue 18), and 900 in ten seconds from one key still do not.
    expect(in10s(config.perKey.send)).toBeLessThanOrEqual(700);
    expect(config.perKey.send!.limit).toBeGreaterThanOrEqual(500);
    expect(config.perTenant.send!.limit).toBeGreaterThanOrEqual(2 * 500);
    // The sustained rates of before: 20 a second per key, 40 per account and mode.
    expect((1000 * config.perKey.send!.limit) / config.perKey.send!.windowMs).toBe(20);
    expect((1000 * config.perTenant.send!.limit) / config.perTenant.send!.windowMs).toBe(40);
  });

  it("stops the one-click flood of the issue 16 review (100 POSTs with one link in 3 s) with the defaults", () => {
    const config = loadRateLimitConfig({});
    const inSpan = (p: { limit: number; windowMs: number } | null, ms: number) => p!.limit + (ms * p!.limit) / p!.windowMs;
    expect(inSpan(config.unsubscribePerLink, 3000)).toBeLessThan(6);
    // A mail provider posting its users' one-click requests from one address: hundreds a minute still pass.
    expect(config.unsubscribePerAddress!.limit).toBeGreaterThanOrEqual(300);
  });

  it("reads every variable", () => {
    const config = loadRateLimitConfig({
      RATE_LIMIT: "on",
      RATE_LIMIT_READ: "1/1s",
      RATE_LIMIT_WRITE: "2/1s",
      RATE_LIMIT_SEND: "300/60s",
      RATE_LIMIT_TENANT_READ: "off",
      RATE_LIMIT_TENANT_WRITE: "4/1s",
      RATE_LIMIT_TENANT_SEND: "5/1s",
      RATE_LIMIT_AUTH_FAILURES: "6/1m",
      RATE_LIMIT_UNSUBSCRIBE_ADDRESS: "7/1m",
      RATE_LIMIT_UNSUBSCRIBE_LINK: "off",
      RATE_LIMIT_PROVIDER_NOTIFICATIONS: "8/1m",
      RATE_LIMIT_SIGN_IN_FAILURES: "9/15m",
      RATE_LIMIT_PASSWORD_RESETS_ADDRESS: "off",
      RATE_LIMIT_PASSWORD_RESETS_EMAIL: "3/1h",
      // The portal's (its preference budgets), in the same environment under npm start: passed over here.
      RATE_LIMIT_PREFERENCE_READ: "7/1m",
      RATE_LIMIT_TENANT_PREFERENCE_PRIVACY: "11/1m",
      RATE_LIMIT_STORE: "mongo",
      MONGO_URL: "mongodb://mongo:27017",
      RATE_LIMIT_STORE_TIMEOUT_MS: "50",
      RATE_LIMIT_MAX_KEYS: "5000",
      TRUSTED_PROXY_HOPS: "1",
    });
    expect(config).toEqual({
      enabled: true,
      perKey: { read: { limit: 1, windowMs: 1000 }, write: { limit: 2, windowMs: 1000 }, send: { limit: 300, windowMs: 60_000 } },
      perTenant: { read: null, write: { limit: 4, windowMs: 1000 }, send: { limit: 5, windowMs: 1000 } },
      authFailures: { limit: 6, windowMs: 60_000 },
      unsubscribePerAddress: { limit: 7, windowMs: 60_000 },
      unsubscribePerLink: null,
      providerNotificationsPerAddress: { limit: 8, windowMs: 60_000 },
      signInFailures: { limit: 9, windowMs: 900_000 },
      passwordResetsPerAddress: null,
      passwordResetsPerEmail: { limit: 3, windowMs: 3_600_000 },
      store: "mongo",
      storeTimeoutMs: 50,
      maxKeys: 5000,
      trustedProxyHops: 1,
    });
    expect(loadRateLimitConfig({ RATE_LIMIT: "off" }).enabled).toBe(false);
  });

  it.each([
    [{ RATE_LIMIT: "no" }, /RATE_LIMIT must be "on" or "off", got "no"/],
    [{ RATE_LIMIT_SEND: "300 per minute" }, /RATE_LIMIT_SEND must be "<requests>\/<window>" such as "300\/60s".*got "300 per minute"/],
    [{ RATE_LIMIT_TENANT_READ: "0/1s" }, /RATE_LIMIT_TENANT_READ the number of requests must be 1 to 1000000, got "0\/1s"/],
    [{ RATE_LIMIT_AUTH_FAILURES: "5/48h" }, /RATE_LIMIT_AUTH_FAILURES the window must be 1 s to 24 h, got "5\/48h"/],
    [{ RATE_LIMIT_UNSUBSCRIBE_LINK: "5 a minute" }, /RATE_LIMIT_UNSUBSCRIBE_LINK must be "<requests>\/<window>"/],
    [{ RATE_LIMIT_STORE: "redis" }, /RATE_LIMIT_STORE must be "memory" or "mongo", got "redis"/],
    [{ RATE_LIMIT_STORE: "mongo" }, /RATE_LIMIT_STORE=mongo .* MONGO_URL is not set/],
    [{ RATE_LIMIT_STORE_TIMEOUT_MS: "0" }, /RATE_LIMIT_STORE_TIMEOUT_MS must be an integer in 1\.\.10000/],
    [{ RATE_LIMIT_MAX_KEYS: "10" }, /RATE_LIMIT_MAX_KEYS must be an integer/],
    [{ TRUSTED_PROXY_HOPS: "x" }, /TRUSTED_PROXY_HOPS must be an integer in 0\.\.10/],
    [{ RATE_LIMIT_SENDS: "5/1s" }, /unknown environment variable RATE_LIMIT_SENDS; the rate-limit settings are RATE_LIMIT_READ, .*RATE_LIMIT_SEND,/],
  ])("a bad value stops the start naming the variable: %j", (env, message) => {
    expect(() => loadRateLimitConfig(env)).toThrow(ConfigError);
    expect(() => loadRateLimitConfig(env)).toThrow(message);
  });
});

describe("client address", () => {
  it("is the peer, whatever X-Forwarded-For says, without trusted proxies", () => {
    expect(clientAddress("10.0.0.9", "203.0.113.7", 0)).toBe("10.0.0.9");
    expect(clientAddress(undefined, undefined, 0)).toBe("unknown");
  });

  it("is the n-th entry from the right behind n trusted proxies", () => {
    // client -> ingress (appends the client) -> gateway
    expect(clientAddress("10.0.0.9", "203.0.113.7", 1)).toBe("203.0.113.7");
    // a forged entry on the left is ignored
    expect(clientAddress("10.0.0.9", "198.51.100.1, 203.0.113.7", 1)).toBe("203.0.113.7");
    // client -> CDN -> ingress -> gateway
    expect(clientAddress("10.0.0.9", "198.51.100.1, 203.0.113.7, 192.0.2.5", 2)).toBe("203.0.113.7");
    // fewer entries than hops: the leftmost
    expect(clientAddress("10.0.0.9", "203.0.113.7", 3)).toBe("203.0.113.7");
    expect(clientAddress("10.0.0.9", "[2001:db8::1]:443, 203.0.113.8:5000", 1)).toBe("203.0.113.8");
    expect(clientAddress("10.0.0.9", "[2001:db8::1]:443", 1)).toBe("2001:db8::1");
  });

  it("falls back to the peer when the trusted entry is no address", () => {
    expect(clientAddress("10.0.0.9", "unknown", 1)).toBe("10.0.0.9");
    expect(clientAddress("10.0.0.9", " , ", 1)).toBe("10.0.0.9");
  });

  it("counts IPv6 per /64 and IPv4-mapped addresses as IPv4", () => {
    expect(addressUnit("203.0.113.7")).toBe("203.0.113.7");
    expect(addressUnit("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(addressUnit("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(addressUnit("2001:DB8:1:2::ffff")).toBe("2001:db8:1:2::/64");
    expect(addressUnit("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressUnit("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressUnit("::1")).toBe("0:0:0:0::/64");
    expect(addressUnit("64:ff9b::192.0.2.33")).toBe("64:ff9b:0:0::/64");
    expect(addressBucketId("2001:db8:1:2::1")).toBe(addressBucketId("2001:db8:1:2:ffff::9"));
    expect(addressBucketId("2001:db8:1:3::1")).not.toBe(addressBucketId("2001:db8:1:2::1"));
  });

  it("keeps no address in the bucket id", () => {
    const id = addressBucketId("203.0.113.7");
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(id).not.toContain("203");
  });
});

describe("ADMIN_TOKEN", () => {
  // A valid credential is served even past the address's failure budget, so
  // the length of the one operator-chosen secret is what keeps it unguessed.
  it("refuses a token shorter than 24 characters, naming the variable", () => {
    expect(() => adminTokenFromEnv({ ADMIN_TOKEN: "change-me" })).toThrow(ConfigError);
    expect(() => adminTokenFromEnv({ ADMIN_TOKEN: "x".repeat(23) })).toThrow(/ADMIN_TOKEN must be at least 24 characters/);
  });

  it("refuses a long token of a few repeated characters", () => {
    expect(() => adminTokenFromEnv({ ADMIN_TOKEN: "a".repeat(24) })).toThrow(/at least 8 different characters/);
    expect(() => adminTokenFromEnv({ ADMIN_TOKEN: "abcdefg".repeat(5) })).toThrow(/at least 8 different characters/);
  });

  it("takes a long random one, and unset stays unset", () => {
    const token = "3f9c0a7b12d4e8a65c0b9f1e";
    expect(adminTokenFromEnv({ ADMIN_TOKEN: token })).toBe(token);
    expect(adminTokenFromEnv({})).toBeUndefined();
    expect(adminTokenFromEnv({ ADMIN_TOKEN: "" })).toBeUndefined();
  });
});
