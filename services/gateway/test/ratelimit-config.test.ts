// Rate-limit settings from the environment, and the client address the
// failed-authentication budget is keyed by.

import { ConfigError } from "@emailsvc/runtime";
import { buildOpenApiDocument } from "../src/openapi";
import { findOperation } from "../src/openapi/lookup";
import { budgetKeyOf, clientAddress, DEFAULT_BUDGETS, loadRateLimitConfig, OPERATION_CLASSES, parseRate, rateClassOf } from "../src/ratelimit";

describe("rate-limit settings", () => {
  it("defaults: every budget on, counters in memory, X-Forwarded-For ignored", () => {
    const config = loadRateLimitConfig({});
    expect(config).toMatchObject({ enabled: true, store: "memory", storeTimeoutMs: 100, trustedProxyHops: 0, maxKeys: 250_000 });
    expect(config.policy.budgets).toEqual(DEFAULT_BUDGETS);
    expect(config.policy.budgets.map((b) => `${b.rateClass}/${b.kind}=${b.limit}/${b.windowMs / 1000}s`)).toEqual([
      "read/api_key=500/10s",
      "read/tenant=1000/10s",
      "write/api_key=200/10s",
      "write/tenant=400/10s",
      "send/api_key=100/10s",
      "send/tenant=200/10s",
      "auth_failure/client_address=20/60s",
    ]);
  });

  it.each([
    ["100/10s", { limit: 100, windowMs: 10_000 }],
    ["300/1m", { limit: 300, windowMs: 60_000 }],
    ["10/s", { limit: 10, windowMs: 1000 }],
    ["5000/1h", { limit: 5000, windowMs: 3_600_000 }],
    [" 7 / 2S ", { limit: 7, windowMs: 2000 }],
    ["1/24h", { limit: 1, windowMs: 86_400_000 }],
  ])("reads %j", (raw, rate) => {
    expect(parseRate("RATE_LIMIT_SEND_PER_KEY", raw)).toEqual(rate);
  });

  it("`off` drops one budget", () => {
    const config = loadRateLimitConfig({ RATE_LIMIT_SEND_PER_TENANT: "off", RATE_LIMIT_READ_PER_KEY: "OFF" });
    const names = config.policy.budgets.map((b) => `${b.rateClass}/${b.kind}`);
    expect(names).not.toContain("send/tenant");
    expect(names).not.toContain("read/api_key");
    expect(names).toContain("send/api_key");
  });

  it("a set variable replaces its default", () => {
    const config = loadRateLimitConfig({ RATE_LIMIT_SEND_PER_KEY: "1000/1m", RATE_LIMIT_AUTH_FAILURE_PER_ADDRESS: "5/5m" });
    expect(config.policy.budgets.find((b) => b.rateClass === "send" && b.kind === "api_key")).toMatchObject({ limit: 1000, windowMs: 60_000 });
    expect(config.policy.budgets.find((b) => b.rateClass === "auth_failure")).toMatchObject({ limit: 5, windowMs: 300_000 });
  });

  it.each(["abc", "100", "100/10", "100/10x", "0/10s", "-1/s", "1.5/s", "10/0s", "10/25h", "2000000000/s", "100/1.5s", "/10s"])(
    "refuses %j naming the variable and the form",
    (raw) => {
      expect(() => loadRateLimitConfig({ RATE_LIMIT_WRITE_PER_TENANT: raw })).toThrow(ConfigError);
      expect(() => loadRateLimitConfig({ RATE_LIMIT_WRITE_PER_TENANT: raw })).toThrow(
        new RegExp(`RATE_LIMIT_WRITE_PER_TENANT must be "<count>/<window>" such as "100/10s".*got "${raw.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}"`),
      );
    },
  );

  it("RATE_LIMITS=off turns every budget off, yet still checks the other settings", () => {
    expect(loadRateLimitConfig({ RATE_LIMITS: "off" })).toMatchObject({ enabled: false, policy: { budgets: [] } });
    expect(() => loadRateLimitConfig({ RATE_LIMITS: "off", RATE_LIMIT_READ_PER_KEY: "lots" })).toThrow(/RATE_LIMIT_READ_PER_KEY/);
    expect(loadRateLimitConfig({ RATE_LIMITS: "on" }).enabled).toBe(true);
    expect(() => loadRateLimitConfig({ RATE_LIMITS: "false" })).toThrow(/RATE_LIMITS must be "on" or "off", got "false"/);
  });

  it("a misspelt RATE_LIMIT variable stops the start rather than leaving a default in force", () => {
    expect(() => loadRateLimitConfig({ RATE_LIMIT_SEND_PER_KEYS: "10/s" })).toThrow(/unknown environment variable RATE_LIMIT_SEND_PER_KEYS/);
    expect(() => loadRateLimitConfig({ RATE_LIMIT: "off" })).toThrow(/unknown environment variable RATE_LIMIT;/);
  });

  it("shared counters need MONGO_URL", () => {
    expect(() => loadRateLimitConfig({ RATE_LIMIT_STORE: "shared" })).toThrow(/RATE_LIMIT_STORE=shared .* needs MONGO_URL/);
    expect(loadRateLimitConfig({ RATE_LIMIT_STORE: "shared", MONGO_URL: "mongodb://db:27017" }).store).toBe("shared");
    expect(() => loadRateLimitConfig({ RATE_LIMIT_STORE: "redis" })).toThrow(/RATE_LIMIT_STORE must be "memory" or "shared", got "redis"/);
  });

  it("numbers in range, naming the variable", () => {
    expect(loadRateLimitConfig({ RATE_LIMIT_TRUSTED_PROXY_HOPS: "2", RATE_LIMIT_STORE_TIMEOUT_MS: "250", RATE_LIMIT_MAX_KEYS: "5000" })).toMatchObject({
      trustedProxyHops: 2,
      storeTimeoutMs: 250,
      maxKeys: 5000,
    });
    expect(() => loadRateLimitConfig({ RATE_LIMIT_TRUSTED_PROXY_HOPS: "-1" })).toThrow(/RATE_LIMIT_TRUSTED_PROXY_HOPS must be an integer in 0..10/);
    expect(() => loadRateLimitConfig({ RATE_LIMIT_STORE_TIMEOUT_MS: "0" })).toThrow(/RATE_LIMIT_STORE_TIMEOUT_MS must be an integer/);
    expect(() => loadRateLimitConfig({ RATE_LIMIT_MAX_KEYS: "10" })).toThrow(/RATE_LIMIT_MAX_KEYS must be an integer in 1000\.\./);
  });
});

describe("the class of an operation", () => {
  const doc = buildOpenApiDocument();

  it("names operations the OpenAPI document has", () => {
    for (const operationId of Object.keys(OPERATION_CLASSES)) expect(findOperation(doc, operationId)).toBeDefined();
  });

  it("sends are send, previews write, the rest by method", () => {
    const classes: Record<string, string> = {};
    for (const [, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item as Record<string, { operationId?: string; security?: unknown[] }>)) {
        const secured = (operation.security ?? doc.security ?? []).some((r) => Object.keys(r as object).includes("ApiKey"));
        if (secured && operation.operationId) classes[operation.operationId] = rateClassOf(operation.operationId, method);
      }
    }
    expect(classes.sendEmail).toBe("send");
    expect(classes.previewTemplate).toBe("write");
    expect(classes.listSubscribers).toBe("read");
    expect(classes.getSandboxMessage).toBe("read");
    expect(classes.createSubscriber).toBe("write");
    expect(classes.deleteTemplate).toBe("write");
    expect(Object.values(classes).filter((c) => c === "send")).toHaveLength(1);
  });
});

describe("client address", () => {
  const peer = (remoteAddress: string, forwardedFor?: string) => ({ remoteAddress, forwardedFor });

  it("without trusted proxies is the TCP peer, whatever X-Forwarded-For claims", () => {
    expect(clientAddress(peer("203.0.113.9", "198.51.100.1"), 0)).toBe("203.0.113.9");
    expect(clientAddress(peer("::ffff:203.0.113.9"), 0)).toBe("203.0.113.9");
  });

  it("with N trusted hops is the entry the N-th proxy appended; what the client wrote further left is ignored", () => {
    // client claims 1.1.1.1, real client 198.51.100.1, our ingress 10.0.0.5, the load balancer is the peer.
    const source = peer("10.0.0.9", "1.1.1.1, 198.51.100.1, 10.0.0.5");
    expect(clientAddress(source, 1)).toBe("10.0.0.5");
    expect(clientAddress(source, 2)).toBe("198.51.100.1");
    // More hops configured than the request went through: the furthest entry seen.
    expect(clientAddress(peer("10.0.0.9", "198.51.100.1"), 5)).toBe("198.51.100.1");
    // No header at all: the peer.
    expect(clientAddress(peer("10.0.0.9"), 1)).toBe("10.0.0.9");
  });

  it("groups IPv6 clients by /64, takes IPv4-mapped addresses as IPv4, drops ports and zones", () => {
    expect(budgetKeyOf("2001:db8:aaaa:bbbb:1:2:3:4")).toBe("2001:db8:aaaa:bbbb::/64");
    expect(budgetKeyOf("2001:DB8:aaaa:bbbb::ffff")).toBe("2001:db8:aaaa:bbbb::/64");
    expect(budgetKeyOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(budgetKeyOf("2001:0db8:0000:0001::")).toBe("2001:db8:0:1::/64");
    expect(budgetKeyOf("::1")).toBe("0:0:0:0::/64");
    expect(budgetKeyOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(budgetKeyOf("[2001:db8:1:2::7]:443")).toBe("2001:db8:1:2::/64");
    expect(budgetKeyOf("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(budgetKeyOf("192.0.2.1:5678")).toBe("192.0.2.1");
    expect(budgetKeyOf("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
  });

  it("anything that is no address shares one budget", () => {
    expect(budgetKeyOf("unknown")).toBe("unknown");
    expect(budgetKeyOf("")).toBe("unknown");
    expect(budgetKeyOf("<script>")).toBe("unknown");
    expect(clientAddress(peer("10.0.0.9", "garbage"), 1)).toBe("unknown");
  });
});
