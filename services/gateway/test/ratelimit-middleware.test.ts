// The rate-limit middleware on a tiny Koa app with the gateway's real pieces
// around it: problems() (problem+json), requireApiKey and requireAdmin over an
// account store, and the limiter on an injected clock. Requests go over HTTP
// from 127.0.0.1; other client addresses come through X-Forwarded-For with a
// trusted proxy hop.

import * as http from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { Router } from "@koa/router";
import { openMongoStore, openStore, type DocumentStore } from "@emailsvc/storage";
import { AdminTokenVerifier, ApiKeyAuthenticator } from "../src/accounts/authenticator";
import { AccountStore } from "../src/accounts/store";
import { requireAdmin, requireApiKey } from "../src/http/auth";
import { problems } from "../src/http/errors";
import { Problem } from "../src/http/problem";
import type { GatewayState } from "../src/http/state";
import {
  classByMethod,
  limitByKey,
  limitFailedAuth,
  loadRateLimitConfig,
  createRateLimiter,
  MemoryCounterStore,
  RateLimiter,
  type RateLimitPolicy,
} from "../src/ratelimit";
import { memoryLogger } from "./support/harness";

const ADMIN = "admin-token-for-rate-limit-tests";

const POLICY: RateLimitPolicy = {
  budgets: [
    { rateClass: "read", kind: "api_key", limit: 5, windowMs: 10_000 },
    { rateClass: "read", kind: "tenant", limit: 8, windowMs: 10_000 },
    { rateClass: "write", kind: "api_key", limit: 3, windowMs: 10_000 },
    { rateClass: "send", kind: "api_key", limit: 2, windowMs: 60_000 },
    { rateClass: "auth_failure", kind: "client_address", limit: 3, windowMs: 60_000 },
  ],
};

interface App {
  url: string;
  clock: { now: () => number; advance(ms: number): void };
  key: string;
  secondKey: string;
  handled: string[];
  close(): Promise<void>;
}

async function startApp(limiterFor: (now: () => number) => RateLimiter, trustedProxyHops = 1): Promise<App> {
  let now = 1_800_000_000_000;
  const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
  const limiter = limiterFor(clock.now);
  const store = await openStore({ dbName: "gateway" });
  const accounts = new AccountStore(store);
  await accounts.ensureIndexes();
  const account = await accounts.createAccount({ name: "A", plan: "starter" });
  const key = (await accounts.createApiKey(account.id, { mode: "live" })).key;
  const secondKey = (await accounts.createApiKey(account.id, { mode: "live" })).key;
  const apiKey = limitFailedAuth(limiter, requireApiKey(new ApiKeyAuthenticator(accounts)), { trustedProxyHops });
  const admin = limitFailedAuth(limiter, requireAdmin(new AdminTokenVerifier(accounts, ADMIN)), { trustedProxyHops });
  const handled: string[] = [];
  const ok = (name: string) => async (ctx: Koa.ParameterizedContext<GatewayState>) => {
    handled.push(name);
    ctx.body = { ok: name };
  };

  const router = new Router<GatewayState>();
  router.get("/things", apiKey, limitByKey(limiter, classByMethod), ok("list"));
  router.post("/things", apiKey, limitByKey(limiter, classByMethod), ok("create"));
  router.post("/send", apiKey, limitByKey(limiter, "send"), ok("send"));
  router.get("/forbidden", apiKey, limitByKey(limiter, "write"), async () => {
    // A 401 raised after authentication (say a service said UNAUTHENTICATED) is no failed authentication.
    throw new Problem(401, "unauthenticated", "The service refused the call.");
  });
  router.get("/admin", admin, ok("admin"));
  router.get("/misplaced", limitByKey(limiter, "read"), ok("misplaced"));

  const app = new Koa<GatewayState>();
  app.use(async (ctx, next) => {
    ctx.state.requestId = "req-1";
    await next();
  });
  app.use(problems(memoryLogger().logger));
  app.use(router.routes());
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    clock,
    key,
    secondKey,
    handled,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await limiter.close();
      await store.close();
    },
  };
}

async function call(app: App, method: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(app.url + path, { method, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const memoryLimiter = (now: () => number) => new RateLimiter(POLICY, new MemoryCounterStore(), { now });

describe("limitByKey", () => {
  let app: App;
  beforeEach(async () => {
    app = await startApp(memoryLimiter);
  });
  afterEach(() => app.close());

  it("sends RateLimit-* on every admitted answer, Remaining counting down", async () => {
    const seen = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await call(app, "GET", "/things", { "x-api-key": app.key });
      expect(res.status).toBe(200);
      seen.push([res.headers.get("ratelimit-limit"), res.headers.get("ratelimit-remaining"), res.headers.get("ratelimit-reset")]);
      expect(res.headers.get("ratelimit-policy")).toBe("5;w=10, 8;w=10");
      expect(res.headers.get("retry-after")).toBeNull();
    }
    // The key's budget (5 per 10 s) binds before the tenant's (8): a unit every 2 s.
    expect(seen).toEqual([
      ["5", "4", "2"],
      ["5", "3", "4"],
      ["5", "2", "6"],
      ["5", "1", "8"],
      ["5", "0", "10"],
    ]);
  });

  it("answers 429 problem+json naming the budget, with Retry-After in whole seconds, and the operation does not run", async () => {
    for (let i = 0; i < 5; i += 1) await call(app, "GET", "/things", { "x-api-key": app.key });
    const res = await call(app, "GET", "/things", { "x-api-key": app.key });
    expect(res.status).toBe(429);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.body).toEqual({
      type: "urn:emailsvc:problem:rate_limited",
      title: "Too Many Requests",
      status: 429,
      code: "rate_limited",
      detail:
        "Rate limit of read requests per API key reached (5 per 10 s); retry in 2 s. The RateLimit-* headers of every answer show what is left.",
      request_id: "req-1",
    });
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.headers.get("ratelimit-remaining")).toBe("0");
    expect(res.headers.get("ratelimit-limit")).toBe("5");
    expect(app.handled).toHaveLength(5);

    app.clock.advance(1999);
    expect((await call(app, "GET", "/things", { "x-api-key": app.key })).status).toBe(429);
    app.clock.advance(1);
    expect((await call(app, "GET", "/things", { "x-api-key": app.key })).status).toBe(200);
  });

  it("the tenant's budget is shared by the account's keys and named when it refuses", async () => {
    for (let i = 0; i < 5; i += 1) await call(app, "GET", "/things", { "x-api-key": app.key });
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await call(app, "GET", "/things", { "x-api-key": app.secondKey })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await call(app, "GET", "/things", { "x-api-key": app.secondKey });
    expect(refused.body.detail).toMatch(/^Rate limit of read requests per account and mode reached \(8 per 10 s\)/);
  });

  it("reads, writes and sends have separate budgets; a class without a tenant budget sends one policy", async () => {
    for (let i = 0; i < 2; i += 1) expect((await call(app, "POST", "/send", { "x-api-key": app.key })).status).toBe(200);
    const refused = await call(app, "POST", "/send", { "x-api-key": app.key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.headers.get("ratelimit-policy")).toBe("2;w=60");
    expect((await call(app, "POST", "/things", { "x-api-key": app.key })).status).toBe(200);
    expect((await call(app, "GET", "/things", { "x-api-key": app.key })).status).toBe(200);
  });

  it("placed before authentication it is a bug: 500, never unlimited", async () => {
    expect((await call(app, "GET", "/misplaced")).status).toBe(500);
  });
});

describe("limitFailedAuth", () => {
  let app: App;
  beforeEach(async () => {
    app = await startApp(memoryLimiter);
  });
  afterEach(() => app.close());

  const from = (address: string) => ({ "x-forwarded-for": address });

  it("after the budget of failures, an address gets 429 before its key is looked at, a valid key included", async () => {
    const statuses = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await call(app, "GET", "/things", { ...from("198.51.100.7"), "x-api-key": `sk_live_${"x".repeat(40)}` })).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    const blocked = await call(app, "GET", "/things", { ...from("198.51.100.7"), "x-api-key": app.key });
    expect(blocked.status).toBe(429);
    expect(blocked.body.detail).toMatch(/^Rate limit of failed authentications per client address reached \(3 per 60 s\); retry in 20 s/);
    expect(blocked.headers.get("retry-after")).toBe("20");
    expect(blocked.headers.get("ratelimit-policy")).toBe("3;w=60");
    expect(app.handled).toHaveLength(0);
    // Another client is not affected; the blocked one recovers with time.
    expect((await call(app, "GET", "/things", { ...from("203.0.113.5"), "x-api-key": app.key })).status).toBe(200);
    app.clock.advance(20_000);
    expect((await call(app, "GET", "/things", { ...from("198.51.100.7"), "x-api-key": app.key })).status).toBe(200);
  });

  it("missing keys count too; successful requests and 401s after authentication do not", async () => {
    for (let i = 0; i < 20; i += 1) expect((await call(app, "GET", "/things", { ...from("192.0.2.1"), "x-api-key": app.key })).status).toBe(i < 5 ? 200 : 429);
    // Those 429s came from the key's read budget, not the address's; the next from its write budget.
    for (let i = 0; i < 10; i += 1) expect((await call(app, "GET", "/forbidden", { ...from("192.0.2.2"), "x-api-key": app.secondKey })).status).toBe(i < 3 ? 401 : 429);
    expect((await call(app, "GET", "/things", from("192.0.2.2"))).status).toBe(401); // missing key: 1st failure
    expect((await call(app, "GET", "/things", from("192.0.2.2"))).status).toBe(401);
    expect((await call(app, "GET", "/things", from("192.0.2.2"))).status).toBe(401);
    expect((await call(app, "GET", "/things", from("192.0.2.2"))).status).toBe(429);
  });

  it("guards the admin token the same way", async () => {
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await call(app, "GET", "/admin", { ...from("192.0.2.9"), authorization: "Bearer wrong" })).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await call(app, "GET", "/admin", { ...from("192.0.2.9"), authorization: `Bearer ${ADMIN}` })).status).toBe(429);
    expect((await call(app, "GET", "/admin", { ...from("192.0.2.10"), authorization: `Bearer ${ADMIN}` })).status).toBe(200);
  });

  it("an IPv6 client rotating through its /64 shares one budget", async () => {
    const statuses = [];
    for (let i = 1; i <= 4; i += 1) statuses.push((await call(app, "GET", "/things", { ...from(`2001:db8:1:2::${i}`), "x-api-key": "wrong" })).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await call(app, "GET", "/things", { ...from("2001:db8:1:3::1"), "x-api-key": "wrong" })).status).toBe(401);
  });

  it("concurrent guesses from one address: every failure that got through is charged", async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, () => call(app, "GET", "/things", { ...from("198.51.100.99"), "x-api-key": "sk_live_guess" })),
    );
    const tried = results.filter((r) => r.status === 401).length;
    expect(tried + results.filter((r) => r.status === 429).length).toBe(50);
    // At least the budget was tried; more only if requests peeked before
    // earlier failures were charged (failures in flight, see the README).
    expect(tried).toBeGreaterThanOrEqual(3);
    const after = await call(app, "GET", "/things", { ...from("198.51.100.99"), "x-api-key": app.key });
    expect(after.status).toBe(429);
    // Each failure moved the address's TAT by 20 s (at most two windows,
    // 120 s, ahead): one unit frees 20 s after it is back inside the window.
    expect(Number(after.headers.get("retry-after"))).toBe(Math.min(tried, 6) * 20 - 40);
  });
});

describe("client address without a trusted proxy", () => {
  it("X-Forwarded-For is ignored: rotating it does not buy fresh budgets", async () => {
    const app = await startApp(memoryLimiter, 0);
    try {
      const statuses = [];
      for (let i = 0; i < 5; i += 1) statuses.push((await call(app, "GET", "/things", { "x-forwarded-for": `203.0.113.${i}`, "x-api-key": "wrong" })).status);
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await app.close();
    }
  });
});

describe("two replicas on shared counters (MONGO_URL)", () => {
  const url = process.env.MONGO_URL;
  if (!url) throw new Error("MONGO_URL is not set: run through the repository's Jest config, whose globalSetup starts FerretDB");
  let shared: DocumentStore;
  beforeAll(async () => {
    shared = await openMongoStore({ url, dbName: `gateway_ratelimit_mw_${Date.now().toString(36)}` });
  });
  afterAll(() => shared.close());

  it("bad guesses spread over both replicas spend one budget (each replica may let one more try than it has seen)", async () => {
    const config = loadRateLimitConfig({
      MONGO_URL: url,
      RATE_LIMIT_STORE: "shared",
      RATE_LIMIT_AUTH_FAILURE_PER_ADDRESS: "3/60s",
      RATE_LIMIT_STORE_TIMEOUT_MS: "10000",
    });
    const limiterFor = (now: () => number) => createRateLimiter(config, { store: shared, now });
    const [a, b] = [await startApp(limiterFor), await startApp(limiterFor)];
    try {
      const statuses = [];
      for (let i = 0; i < 10; i += 1) {
        const replica = i % 2 === 0 ? a : b;
        statuses.push((await call(replica, "GET", "/things", { "x-forwarded-for": "198.51.100.50", "x-api-key": "wrong" })).status);
      }
      const tried = statuses.filter((s) => s === 401).length;
      // Counters per replica would let 3 + 3 try.
      expect(tried).toBeGreaterThanOrEqual(3);
      expect(tried).toBeLessThanOrEqual(4);
      expect(statuses.slice(-4)).toEqual([429, 429, 429, 429]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("RATE_LIMITS=off", () => {
  it("nothing is limited and no RateLimit headers are sent", async () => {
    const config = loadRateLimitConfig({ RATE_LIMITS: "off" });
    const app = await startApp((now) => createRateLimiter(config, { store: undefined as never, now }));
    try {
      for (let i = 0; i < 30; i += 1) {
        const res = await call(app, "POST", "/send", { "x-api-key": app.key });
        expect(res.status).toBe(200);
        expect(res.headers.get("ratelimit-limit")).toBeNull();
      }
      for (let i = 0; i < 30; i += 1) expect((await call(app, "GET", "/things", { "x-api-key": "wrong" })).status).toBe(401);
    } finally {
      await app.close();
    }
  });
});
