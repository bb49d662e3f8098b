// Regression test of issue 6, defect 2: 2,000 reads, 2,000 bad-key guesses
// and 900 sends in ten seconds all passed. Through the REST API: reads,
// writes, sends and failed authentications beyond their budgets get 429
// `rate_limited` with Retry-After and the RateLimit headers, which successful
// responses carry too; other keys, tenants and addresses are unaffected;
// budgets recover. The limiter's clock is moved by hand (no sleeping); every
// response is checked against the OpenAPI document by the harness.

import { MongoClient } from "mongodb";
import { openMongoStore, type DocumentStore } from "@emailsvc/storage";
import { parseKeyRing, signToken } from "@emailsvc/tokens";
import { AppError } from "@emailsvc/errors";
import { loadRateLimitConfig } from "../src/ratelimit/config";
import { startHarness, type Harness, type TestResponse } from "./support/harness";

const T0 = 1_700_000_000_000;

const SMALL = {
  RATE_LIMIT_READ: "5/10s",
  RATE_LIMIT_WRITE: "3/10s",
  RATE_LIMIT_SEND: "2/10s",
  RATE_LIMIT_TENANT_READ: "8/10s",
  RATE_LIMIT_TENANT_WRITE: "6/10s",
  RATE_LIMIT_TENANT_SEND: "4/10s",
  RATE_LIMIT_AUTH_FAILURES: "4/60s",
};

function rateHeaders(res: TestResponse): Record<string, string | null> {
  return Object.fromEntries(
    ["retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "ratelimit-policy"].map((name) => [name, res.headers.get(name)]),
  );
}

function expectRateLimited(res: TestResponse, detail: RegExp): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status: 429, code: "rate_limited" });
  expect(res.body.detail).toMatch(detail);
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get("ratelimit-remaining")).toBe("0");
}

describe("rate limits through the REST API", () => {
  let h: Harness;
  let now = T0;
  let key2: string;
  let liveKey: string;
  beforeAll(async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig(SMALL), rateLimitClock: () => now });
    key2 = (await h.running.gateway.accounts.createApiKey(h.accountId, { mode: "test" })).key;
    liveKey = (await h.running.gateway.accounts.createApiKey(h.accountId, { mode: "live" })).key;
  });
  afterAll(() => h.close());

  it("reads beyond the key's budget get 429 with Retry-After; every answer tells the budget", async () => {
    now = T0;
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 5; i++) {
      const res = await h.request("GET", "/api/v1/tags");
      expect(res.status).toBe(200);
      remaining.push(res.headers.get("ratelimit-remaining"));
      expect(res.headers.get("ratelimit-limit")).toBe("5");
      expect(res.headers.get("ratelimit-policy")).toBe('5;w=10;comment="read per API key", 8;w=10;comment="read per account and mode"');
    }
    expect(remaining).toEqual(["4", "3", "2", "1", "0"]);
    const calls = h.fake.calls.length;

    const refused = await h.request("GET", "/api/v1/tags");
    expectRateLimited(refused, /^Too many read requests for this API key: the budget is 5 per 10 s\. Retry in 2 s\.$/);
    expect(rateHeaders(refused)).toEqual({
      "retry-after": "2",
      "ratelimit-limit": "5",
      "ratelimit-remaining": "0",
      "ratelimit-reset": "10",
      "ratelimit-policy": '5;w=10;comment="read per API key", 8;w=10;comment="read per account and mode"',
    });
    // Refused before the service was called; a 404 read is a read too.
    expect(h.fake.calls.length).toBe(calls);
    expect((await h.request("GET", "/api/v1/subscribers/sub_00000000000000000000000000")).status).toBe(429);
  });

  it("leaves the other budgets, keys and tenants alone, and counts a tenant's keys together", async () => {
    // Writes have their own budget.
    const tag = await h.request("POST", "/api/v1/tags", { body: { name: "vip" } });
    expect(tag.status).toBe(201);
    expect(tag.headers.get("ratelimit-policy")).toMatch(/^3;w=10;comment="write per API key", 6;w=10/);
    // Another key of the same tenant: its own key budget, but the tenant has 8 - 5 = 3 reads left.
    for (let i = 0; i < 3; i++) expect((await h.request("GET", "/api/v1/tags", { key: key2 })).status).toBe(200);
    const tenantSpent = await h.request("GET", "/api/v1/tags", { key: key2 });
    expectRateLimited(tenantSpent, /^Too many read requests for this account in test mode: the budget is 8 per 10 s\./);
    expect(tenantSpent.headers.get("ratelimit-limit")).toBe("8");
    // Another tenant (the live mode of the account) is unaffected.
    const live = await h.request("GET", "/api/v1/tags", { key: liveKey });
    expect(live.status).toBe(200);
    expect(live.headers.get("ratelimit-remaining")).toBe("4");
  });

  it("recovers: one read per emission interval, the whole budget after the window", async () => {
    now = T0 + 1999;
    expect((await h.request("GET", "/api/v1/tags")).status).toBe(429);
    now = T0 + 2000;
    // The key has one again, and the tenant (8 per 10 s: one per 1.25 s) too.
    const again = await h.request("GET", "/api/v1/tags");
    expect(again.status).toBe(200);
    expect(again.headers.get("ratelimit-remaining")).toBe("0");
    expect((await h.request("GET", "/api/v1/tags")).status).toBe(429);
    now = T0 + 60_000;
    const whole = await h.request("GET", "/api/v1/tags");
    expect(whole.status).toBe(200);
    expect(whole.headers.get("ratelimit-remaining")).toBe("4");
  });

  it("admits no more than the budget to concurrent requests", async () => {
    now = T0 + 100_000;
    const key = (await h.running.gateway.accounts.createApiKey(h.accountId, { mode: "live" })).key;
    const statuses = await Promise.all(Array.from({ length: 20 }, () => h.request("GET", "/api/v1/tags", { key }).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
  });

  it("sends have their own, smaller budget, checked before the body is read", async () => {
    now = T0 + 120_000;
    await h.request("POST", "/api/v1/templates", {
      body: { name: "Welcome", slug: "welcome", subject: "Hi", mjml_content: "<mjml><mj-body></mj-body></mjml>", category: "transactional" },
    });
    const send = (to: string) => h.request("POST", "/api/v1/emails/send", { body: { template_slug: "welcome", to } });
    h.delivery.calls.length = 0;
    expect((await send("a@example.com")).status).toBe(202);
    const second = await send("b@example.com");
    expect(second.status).toBe(202);
    expect(second.headers.get("ratelimit-policy")).toBe('2;w=10;comment="send per API key", 4;w=10;comment="send per account and mode"');
    const third = await send("c@example.com");
    expectRateLimited(third, /^Too many send requests for this API key: the budget is 2 per 10 s\. Retry in 5 s\.$/);
    expect(h.delivery.calls).toHaveLength(2);
    // A spent budget answers before the body is looked at.
    const garbage = await h.request("POST", "/api/v1/emails/send", { rawBody: "{not json", headers: { "content-type": "application/json" } });
    expect(garbage.status).toBe(429);
    // Reads of the same key are another budget.
    expect((await h.request("GET", "/api/v1/emails")).status).toBe(200);
  });
});

describe("failed authentication per client address", () => {
  // Issue 16, defect 8: once an address had spent its failure budget, valid
  // keys, the admin token and preference tokens from it got 429 too, so one
  // guesser behind a shared proxy locked everyone out. Now a valid
  // credential is always checked and served; only failures are refused.
  let h: Harness;
  let now = T0;
  const keys = parseKeyRing(`k1:${Buffer.alloc(32, 7).toString("base64")}`);
  const preferenceToken = (subscriberId: string) =>
    signToken(keys, { purpose: "preferences", accountId: h.accountId, mode: "test", subscriberId }, { ttlSeconds: 3600 });
  beforeAll(async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig(SMALL), rateLimitClock: () => now, tokenKeys: keys, portal: true });
  });
  afterAll(() => h.close());

  it("bad-key guesses beyond the budget get 429; valid credentials from that address are still served", async () => {
    const guess = (i: number) => `sk_live_${String(i).padStart(40, "A")}`;
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 4; i++) {
      const res = await h.request("GET", "/api/v1/tags", { key: guess(i) });
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: "invalid_api_key" });
      expect(res.headers.get("ratelimit-policy")).toBe('4;w=60;comment="failed authentication per client address"');
      remaining.push(res.headers.get("ratelimit-remaining"));
    }
    expect(remaining).toEqual(["3", "2", "1", "0"]);
    const blocked = await h.request("GET", "/api/v1/tags", { key: guess(4) });
    expectRateLimited(blocked, /^Too many failed authentication attempts from this address: the budget is 4 per 60 s\. Retry in 15 s\.$/);
    expect(rateHeaders(blocked)).toMatchObject({ "retry-after": "15", "ratelimit-limit": "4", "ratelimit-reset": "60" });

    // The same address with valid credentials: a key, the admin token, a preference token.
    const valid = await h.request("GET", "/api/v1/tags");
    expect(valid.status).toBe(200);
    // Its own budgets apply, not the address's failures.
    expect(valid.headers.get("ratelimit-policy")).toBe('5;w=10;comment="read per API key", 8;w=10;comment="read per account and mode"');
    expect((await h.request("GET", "/admin/v1/accounts", { admin: true })).status).toBe(200);
    const preferences = await h.request("GET", "/api/v1/preference-center", { key: null, headers: { authorization: `Bearer ${preferenceToken("sub_01jd3x0k8m7y6t5r4q3p2n1m0k")}` } });
    expect(preferences.status).toBe(200);

    // Every further failure is still refused, whatever kind of credential it is.
    expectRateLimited(await h.request("GET", "/api/v1/tags", { key: guess(5) }), /failed authentication attempts from this address/);
    expectRateLimited(await h.request("GET", "/admin/v1/accounts", { admin: "wrong-admin-token" }), /failed authentication attempts from this address/);
    expectRateLimited(
      await h.request("GET", "/api/v1/preference-center", { key: null, headers: { authorization: "Bearer a.b.c" } }),
      /failed authentication attempts from this address/,
    );
    // Routes without credentials are not limited.
    expect((await h.request("GET", "/api/v1/openapi.json", { key: null })).status).toBe(200);
    // 15 s later the budget has room for one more failure: a 401 again, then 429.
    now = T0 + 15_000;
    expect((await h.request("GET", "/api/v1/tags", { key: guess(6) })).status).toBe(401);
    expect((await h.request("GET", "/api/v1/tags", { key: guess(7) })).status).toBe(429);
  });

  it("counts invalid admin tokens and preference tokens in the same budget, and not a missing credential", async () => {
    now = T0 + 600_000;
    for (let i = 0; i < 5; i++) expect((await h.request("GET", "/api/v1/tags", { key: null })).status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await h.request("GET", "/admin/v1/accounts", { admin: `wrong-token-${i}` })).status).toBe(401);
    const bad = await h.request("GET", "/api/v1/preference-center", { key: null, headers: { authorization: "Bearer a.b.c" } });
    expect({ status: bad.status, code: bad.body.code, remaining: bad.headers.get("ratelimit-remaining") }).toEqual({
      status: 401,
      code: "invalid_preference_token",
      remaining: "0",
    });
    const blocked = await h.request("GET", "/admin/v1/accounts", { admin: "wrong-token-4" });
    expectRateLimited(blocked, /failed authentication attempts from this address/);
  });
});

describe("the preference-center API (preference tokens)", () => {
  // Issue 16, defect 6 and its review: the budgets of a subscriber's own
  // requests are the portal's, charged in its use cases for its REST API and
  // its page alike (services/portal/test/budgets.test.ts, and end to end in
  // embedded/test/rate-limit.test.ts). The gateway charges none of its own
  // (a subscriber would otherwise spend two budgets), and passes the portal's
  // answer on: RateLimit headers on success, 429 with Retry-After on refusal.
  let h: Harness;
  const keys = parseKeyRing(`k1:${Buffer.alloc(32, 9).toString("base64")}`);
  const subscriber = (n: number) => `sub_01jd3x0k8m7y6t5r4q3p2n1m${String(n).padStart(2, "0")}`;
  const bearer = (subscriberId: string) => ({
    key: null,
    headers: { authorization: `Bearer ${signToken(keys, { purpose: "preferences", accountId: h.accountId, mode: "test", subscriberId }, { ttlSeconds: 3600 })}` },
  });
  beforeAll(async () => {
    // The gateway's own budgets tiny: none of them may touch a preference-token request.
    h = await startHarness({ rateLimit: loadRateLimitConfig({ ...SMALL, RATE_LIMIT_READ: "1/1h", RATE_LIMIT_TENANT_READ: "1/1h" }), tokenKeys: keys, portal: true });
  });
  afterAll(() => h.close());

  const refusal = new AppError("rate_limited", "rate_limited", "Too many privacy requests for this subscriber: the budget is 2 per 3600 s. Retry in 1800 s.", {
    metadata: {
      "retry-after": "1800",
      "ratelimit-limit": "2",
      "ratelimit-remaining": "0",
      "ratelimit-reset": "3600",
      "ratelimit-policy": '2;w=3600;comment="privacy per subscriber", 20;w=60;comment="preference privacy per account and mode"',
    },
  });

  it("passes the portal's refusal on as 429 rate_limited with its Retry-After and RateLimit headers", async () => {
    h.portal.failNext = refusal;
    const refused = await h.request("GET", "/api/v1/preference-center/export", bearer(subscriber(1)));
    expectRateLimited(refused, /^Too many privacy requests for this subscriber: the budget is 2 per 3600 s\. Retry in 1800 s\.$/);
    expect(rateHeaders(refused)).toEqual(refusal.extra.metadata);
    h.portal.failNext = refusal;
    expect((await h.request("DELETE", "/api/v1/preference-center/account", bearer(subscriber(1)))).status).toBe(429);
  });

  it("passes the portal's RateLimit headers on with every answer, and charges nothing itself", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await h.request("GET", "/api/v1/preference-center", bearer(subscriber(2)));
      statuses.push(res.status);
      expect(res.headers.get("ratelimit-policy")).toBe('60;w=60;comment="read per subscriber", 100;w=1;comment="preference read per account and mode"');
      expect(res.headers.get("ratelimit-remaining")).toBe("59");
    }
    // The gateway's read budget is one an hour: a preference-token request never draws from it.
    expect(statuses).toEqual([200, 200, 200, 200]);
  });
});

describe("a service's refusal from its own budget or quota (issue 16 review)", () => {
  // The API key's RateLimit headers are set on every answer before the request
  // reaches a service. A service that then refuses from its own budget (the
  // test-mode quota, with Retry-After) is what the 429 describes: its
  // RateLimit headers, never the key's `RateLimit-Remaining: 16` beside a
  // `Retry-After: 17280`, which contradict each other.
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig(SMALL), rateLimitClock: () => T0 });
  });
  afterAll(() => h.close());
  const send = { body: { template_slug: "quota", to: "someone@example.com" } };
  const quota = (metadata: Record<string, string>) => new AppError("rate_limited", "test_mode_quota_exceeded", "test mode sends at most 2 messages a day per account", { metadata });

  it("answers the service's RateLimit headers with its Retry-After, not the key's", async () => {
    const theirs = {
      "retry-after": "17280",
      "ratelimit-limit": "5",
      "ratelimit-remaining": "0",
      "ratelimit-reset": "86400",
      "ratelimit-policy": '5;w=86400;comment="test-mode messages per account"',
    };
    h.delivery.failNext = quota(theirs);
    const refused = await h.request("POST", "/api/v1/emails/send", send);
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 429, code: "test_mode_quota_exceeded" });
    expect(rateHeaders(refused)).toEqual(theirs);
  });

  it("answers a refusal that sent Retry-After only with no RateLimit headers at all, rather than the key's", async () => {
    // Outside the document (every refusing service here sends its RateLimit
    // headers), so read without the harness's check of it.
    h.delivery.failNext = quota({ "retry-after": "17280" });
    const res = await fetch(`${h.url}/api/v1/emails/send`, {
      method: "POST",
      headers: { "x-api-key": h.key, "content-type": "application/json" },
      body: JSON.stringify(send.body),
    });
    expect(res.status).toBe(429);
    expect(rateHeaders({ status: res.status, headers: res.headers, body: await res.json(), text: "" })).toEqual({
      "retry-after": "17280",
      "ratelimit-limit": null,
      "ratelimit-remaining": null,
      "ratelimit-reset": null,
      "ratelimit-policy": null,
    });
    // The key's own budget still speaks on its answers.
    expect((await h.request("GET", "/api/v1/templates")).headers.get("ratelimit-policy")).toMatch(/comment="read per API key"/);
  });
});

describe("behind a trusted proxy (TRUSTED_PROXY_HOPS=1)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig({ ...SMALL, TRUSTED_PROXY_HOPS: "1" }), rateLimitClock: () => T0 });
  });
  afterAll(() => h.close());

  it("counts failures per address the proxy saw; what the client wrote to the left is ignored", async () => {
    const bad = { key: `sk_test_${"B".repeat(40)}` };
    for (let i = 0; i < 4; i++) {
      // The client rotates a forged first entry; the proxy appended the real one.
      const res = await h.request("GET", "/api/v1/tags", { ...bad, headers: { "x-forwarded-for": `10.9.9.${i}, 203.0.113.7` } });
      expect(res.status).toBe(401);
    }
    expect((await h.request("GET", "/api/v1/tags", { ...bad, headers: { "x-forwarded-for": "203.0.113.7" } })).status).toBe(429);
    // Its valid key is served; another client behind the same proxy is unaffected.
    expect((await h.request("GET", "/api/v1/tags", { headers: { "x-forwarded-for": "203.0.113.7" } })).status).toBe(200);
    expect((await h.request("GET", "/api/v1/tags", { ...bad, headers: { "x-forwarded-for": "203.0.113.8" } })).status).toBe(401);
    // IPv6 clients count per /64.
    for (let i = 0; i < 4; i++) {
      expect((await h.request("GET", "/api/v1/tags", { ...bad, headers: { "x-forwarded-for": `2001:db8:1:2::${i + 1}` } })).status).toBe(401);
    }
    expect((await h.request("GET", "/api/v1/tags", { ...bad, headers: { "x-forwarded-for": "2001:db8:1:2:ffff::1" } })).status).toBe(429);
    expect((await h.request("GET", "/api/v1/tags", { ...bad, headers: { "x-forwarded-for": "2001:db8:1:3::1" } })).status).toBe(401);
  });
});

describe("a budget whose interval is no round number (7 per 10 s: 1428.57… ms)", () => {
  // Regression: the sum of seven such intervals at today's epoch rounded above
  // the window, and the 7th request of a full budget was refused.
  let h: Harness;
  const now = T0;
  beforeAll(async () => {
    h = await startHarness({
      rateLimit: loadRateLimitConfig({ RATE_LIMIT_READ: "7/10s", RATE_LIMIT_TENANT_READ: "off" }),
      rateLimitClock: () => now,
    });
  });
  afterAll(() => h.close());

  it("admits all seven at once, Remaining counting to 0, then 429", async () => {
    const seen: Array<[number, string | null]> = [];
    for (let i = 0; i < 7; i++) {
      const res = await h.request("GET", "/api/v1/tags");
      seen.push([res.status, res.headers.get("ratelimit-remaining")]);
    }
    expect(seen).toEqual([6, 5, 4, 3, 2, 1, 0].map((left) => [200, String(left)]));
    const refused = await h.request("GET", "/api/v1/tags");
    expectRateLimited(refused, /read requests for this API key: the budget is 7 per 10 s/);
    expect(refused.headers.get("retry-after")).toBe("2");
  });
});

describe("RATE_LIMIT=off", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig({ ...SMALL, RATE_LIMIT: "off" }) });
  });
  afterAll(() => h.close());

  it("limits nothing and sends no RateLimit headers", async () => {
    for (let i = 0; i < 20; i++) {
      const res = await h.request("GET", "/api/v1/tags");
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBeNull();
    }
    for (let i = 0; i < 10; i++) expect((await h.request("GET", "/api/v1/tags", { key: `sk_test_${"C".repeat(40)}` })).status).toBe(401);
  });
});

describe("two gateway replicas on one MongoDB database (RATE_LIMIT_STORE=mongo)", () => {
  const url = process.env.MONGO_URL;
  const dbName = `gateway_replicas_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  let stores: DocumentStore[] = [];
  let replicas: Harness[] = [];
  let now = T0;

  beforeAll(async () => {
    if (!url) throw new Error("MONGO_URL is not set: run through the repository's Jest config, whose globalSetup starts FerretDB");
    stores = [await openMongoStore({ url, dbName }), await openMongoStore({ url, dbName })];
    const rateLimit = loadRateLimitConfig({ ...SMALL, RATE_LIMIT_STORE: "mongo", MONGO_URL: url, RATE_LIMIT_STORE_TIMEOUT_MS: "10000" });
    replicas = [
      await startHarness({ store: stores[0], rateLimit, rateLimitClock: () => now }),
      await startHarness({ store: stores[1], rateLimit, rateLimitClock: () => now }),
    ];
  });
  afterAll(async () => {
    for (const r of replicas) await r.close();
    for (const s of stores) await s.close();
    if (url) {
      const client = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
      await client.db(dbName).dropDatabase();
      await client.close();
    }
  });

  it("share one read budget per key: alternating between them admits the budget once", async () => {
    const [a, b] = replicas as [Harness, Harness];
    // a's key works on b: the accounts are in the same database.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await (i % 2 ? b : a).request("GET", "/api/v1/tags", { key: a.key })).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.slice(5)).toEqual([429, 429, 429, 429, 429]);
    now = T0 + 2000;
    expect((await b.request("GET", "/api/v1/tags", { key: a.key })).status).toBe(200);
    expect((await a.request("GET", "/api/v1/tags", { key: a.key })).status).toBe(429);
  });

  it("admit no more than the budget to concurrent requests on both", async () => {
    const [a, b] = replicas as [Harness, Harness];
    now = T0 + 300_000;
    const key = (await a.running.gateway.accounts.createApiKey(a.accountId, { mode: "live" })).key;
    const statuses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? b : a).request("GET", "/api/v1/tags", { key }).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
  });

  it("share the failure budget of an address", async () => {
    const [a, b] = replicas as [Harness, Harness];
    now = T0 + 600_000;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await (i % 2 ? b : a).request("GET", "/api/v1/tags", { key: `sk_test_${String(i).padStart(40, "D")}` })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429, 429, 429]);
  });
});

describe("the one-click link (/unsubscribe)", () => {
  // Issue 16 review: 100 one-click POSTs with one link answered 200 in 3 s,
  // each calling three or four services. Budgets per client address (page and
  // POST) and per link (POST), charged before any service is called.
  let h: Harness;
  let now = T0;
  const keys = parseKeyRing(`k1:${Buffer.alloc(32, 7).toString("base64")}`);
  const link = (subscriberId: string) =>
    `/unsubscribe?token=${signToken(keys, { purpose: "unsubscribe", accountId: h.accountId, mode: "test", subscriberId }, { ttlSeconds: 3600 })}`;
  const from = (address: string, accept = "text/html") => ({ key: null, headers: { "x-forwarded-for": address, accept } });
  const post = (path: string, address: string, accept = "text/html") =>
    h.request("POST", path, { key: null, rawBody: "List-Unsubscribe=One-Click", headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address, accept } });
  beforeAll(async () => {
    h = await startHarness({
      rateLimit: loadRateLimitConfig({ RATE_LIMIT_UNSUBSCRIBE_ADDRESS: "4/60s", RATE_LIMIT_UNSUBSCRIBE_LINK: "2/60s", TRUSTED_PROXY_HOPS: "1" }),
      rateLimitClock: () => now,
      tokenKeys: keys,
    });
  });
  afterAll(() => h.close());

  it("refuses a client address past its budget, page or POST, before any service is asked; other addresses go on", async () => {
    const subscriberCalls = () => h.fake.calls.length;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.request("GET", link(`sub_01jd3x0k8m7y6t5r4q3p2n1m${String(i).padStart(2, "0")}`), from("198.51.100.7"))).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    const before = subscriberCalls();
    const page = await h.request("GET", link("sub_01jd3x0k8m7y6t5r4q3p2n1m09"), from("198.51.100.7"));
    expect(page.status).toBe(429);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.text).toContain("Too many requests");
    expect(page.headers.get("retry-after")).toBe("15");
    const problem = await post(link("sub_01jd3x0k8m7y6t5r4q3p2n1m09"), "198.51.100.7", "application/json");
    expect(problem.status).toBe(429);
    expect(problem.body.detail).toBe("Too many unsubscribe requests from this address: the budget is 4 per 60 s. Retry in 15 s.");
    expect(problem.headers.get("ratelimit-policy")).toBe('4;w=60;comment="unsubscribe per client address"');
    expect(subscriberCalls()).toBe(before);
    expect((await h.request("GET", link("sub_01jd3x0k8m7y6t5r4q3p2n1m09"), from("198.51.100.8"))).status).toBe(200);
    // 15 s later one more fits (4 per 60 s).
    now += 15_000;
    expect((await h.request("GET", link("sub_01jd3x0k8m7y6t5r4q3p2n1m09"), from("198.51.100.7"))).status).toBe(200);
  });

  it("refuses one-click POSTs of one link past its budget, whatever the address; another link goes on", async () => {
    now = T0 + 3_600_000;
    const one = link("sub_01jd3x0k8m7y6t5r4q3p2n1m20");
    const statuses: number[] = [];
    for (const address of ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) statuses.push((await post(one, address)).status);
    expect(statuses).toEqual([200, 200, 429]);
    const refused = await post(one, "203.0.113.4", "application/json");
    expect(refused.body.detail).toBe("Too many one-click requests for this link: the budget is 2 per 60 s. Retry in 30 s.");
    expect((await post(link("sub_01jd3x0k8m7y6t5r4q3p2n1m21"), "203.0.113.4")).status).toBe(200);
  });
});
