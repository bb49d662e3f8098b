// Regression test of issue 6, defect 2, and of issue 16, defects 6 and 8,
// against the whole platform in this process (real services over gRPC,
// embedded store), configured as an operator would: RATE_LIMIT_* in the
// environment. Before the fixes, 2,000 reads, 2,000 bad-key guesses and 900
// sends in ten seconds all passed (issue 6); 300 exports through one
// preference token in 1.45 s passed (issue 16, 6); and after 20 failed
// authentications from an address, valid keys, the admin token and
// preference tokens from it got 429 too (issue 16, 8).
// Budgets are per minute here, so nothing recovers while the test runs (the
// gateway's rate-limit.test.ts moves a clock to show recovery).

import { startTestPlatform, type TestPlatform } from "./support/platform-client";

describe("rate limits of the running platform", () => {
  let t: TestPlatform;
  let otherKey: string;

  beforeAll(async () => {
    t = await startTestPlatform("rate-limit", {
      RATE_LIMIT_READ: "3/60s",
      RATE_LIMIT_SEND: "2/60s",
      RATE_LIMIT_AUTH_FAILURES: "3/60s",
      RATE_LIMIT_PREFERENCE_PRIVACY: "2/1h",
    });
    otherKey = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "test" } })).body.key;
  }, 120_000);
  afterAll(() => t?.close());

  it("refuses reads beyond the key's budget with 429, Retry-After and RateLimit headers; another key reads on", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await t.call("GET", "/api/v1/subscribers");
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-remaining")).toBe(String(2 - i));
    }
    const refused = await t.call("GET", "/api/v1/subscribers");
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 429, code: "rate_limited" });
    // One read comes back every 20 s; the clock is the real one, so "at most".
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(refused.body.detail).toBe(`Too many read requests for this API key: the budget is 3 per 60 s. Retry in ${retryAfter} s.`);
    expect(refused.headers.get("ratelimit-limit")).toBe("3");
    expect(Number(refused.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(retryAfter);
    expect(Number(refused.headers.get("ratelimit-reset"))).toBeLessThanOrEqual(60);
    expect(refused.headers.get("ratelimit-policy")).toBe('3;w=60;comment="read per API key", 200;w=1;comment="read per account and mode"');
    expect((await t.call("GET", "/api/v1/subscribers", { key: otherKey })).status).toBe(200);
  });

  it("refuses sends beyond the key's budget: nothing more is queued", async () => {
    const template = await t.call("POST", "/api/v1/templates", {
      body: {
        name: "Rate",
        slug: "rate",
        subject: "Hi",
        mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>",
        category: "transactional",
      },
    });
    expect(template.status).toBe(201);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await t.call("POST", "/api/v1/emails/send", { body: { template_slug: "rate", to: `r${i}@example.com` } })).status);
    }
    expect(statuses).toEqual([202, 202, 429, 429, 429]);
    // Two emails exist in the tenant, read with the other key (its read budget is untouched).
    const emails = await t.call("GET", "/api/v1/emails", { key: otherKey });
    expect(emails.body.items).toHaveLength(2);
  });

  it("refuses exports through a preference token beyond the subscriber's privacy budget; erasure shares it", async () => {
    const subscriber = await t.call("POST", "/api/v1/subscribers", { key: otherKey, body: { email: "exports@example.com" } });
    expect(subscriber.status).toBe(201);
    const token = (await t.call("POST", `/api/v1/subscribers/${subscriber.body.id}/preference-token`, { key: otherKey })).body.token as string;
    // A second link of the same subscriber draws from the same budget.
    const second = (await t.call("POST", `/api/v1/subscribers/${subscriber.body.id}/preference-token`, { key: otherKey })).body.token as string;
    const asSubscriber = (bearer: string) => ({ key: null, headers: { authorization: `Bearer ${bearer}` } });
    const statuses: number[] = [];
    for (const bearer of [token, second, token, second]) {
      statuses.push((await t.call("GET", "/api/v1/preference-center/export", asSubscriber(bearer))).status);
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
    const refused = await t.call("GET", "/api/v1/preference-center/export", asSubscriber(token));
    expect(refused.body.detail).toMatch(/^Too many privacy requests for this subscriber: the budget is 2 per 3600 s\. Retry in \d+ s\.$/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("ratelimit-policy")).toMatch(/^2;w=3600;comment="privacy per subscriber", \d+;w=\d+;comment="preference privacy per account and mode"$/);
    // The erasure too: the subscriber is still there.
    expect((await t.call("DELETE", "/api/v1/preference-center/account", asSubscriber(token))).status).toBe(429);
    expect((await t.call("GET", `/api/v1/subscribers/${subscriber.body.id}`, { key: otherKey })).status).toBe(200);
    // Reading their preferences is a budget of its own.
    expect((await t.call("GET", "/api/v1/preference-center", asSubscriber(token))).status).toBe(200);
  });

  it("refuses bad-credential guesses from an address beyond its budget; valid credentials from it are still served", async () => {
    // A key with its read budget whole, and a preference token, both from before the address is blocked.
    const freshKey = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "test" } })).body.key as string;
    const subscriber = await t.call("POST", "/api/v1/subscribers", { key: freshKey, body: { email: "blocked-address@example.com" } });
    const token = (await t.call("POST", `/api/v1/subscribers/${subscriber.body.id}/preference-token`, { key: freshKey })).body.token as string;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await t.call("GET", "/api/v1/tags", { key: `sk_test_${String(i).padStart(40, "Z")}` })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
    const refused = await t.call("GET", "/api/v1/tags", { key: `sk_test_${"Y".repeat(40)}` });
    expect(refused.body.detail).toMatch(/failed authentication attempts from this address/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Everyone else behind this address: a valid key, the admin token, a preference token.
    const valid = await t.call("GET", "/api/v1/tags", { key: freshKey });
    expect(valid.status).toBe(200);
    expect((await t.call("GET", "/admin/v1/accounts", { admin: true })).status).toBe(200);
    const preferences = await t.call("GET", "/api/v1/preference-center", { key: null, headers: { authorization: `Bearer ${token}` } });
    expect(preferences.status).toBe(200);
    // The guesser still gets nowhere: each further failure is a 429, whatever it presents.
    expect((await t.call("GET", "/admin/v1/accounts", { key: null, headers: { authorization: "Bearer not-the-admin-token" } })).status).toBe(429);
    expect((await t.call("GET", "/api/v1/preference-center", { key: null, headers: { authorization: `Bearer ${token}x` } })).status).toBe(429);
  });
});

describe("one budget per subscriber, whichever door (issue 16 review)", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform("rate-limit-doors", { RATE_LIMIT_PREFERENCE_PRIVACY: "2/1h", RATE_LIMIT_PREFERENCE_WRITE: "3/60s" });
  }, 120_000);
  afterAll(() => t?.close());

  /** The subscriber's page session: its path and form secret. */
  async function openPage(id: string): Promise<{ path: string; csrf: string }> {
    const link = (await t.call("POST", `/api/v1/subscribers/${id}/preference-token`)).body.url as string;
    const first = await fetch(`${t.platform.portalUrl}${link.slice(link.indexOf("/preferences"))}`, { redirect: "manual" });
    const path = first.headers.get("location")!.split("?")[0]!;
    const html = await (await fetch(`${t.platform.portalUrl}${path}`)).text();
    return { path, csrf: /name="csrf" value="([^"]+)"/.exec(html)![1]! };
  }
  const pagePost = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${t.platform.portalUrl}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    });

  it("counts the page's exports and the API's against the same privacy budget, and answers the page with a 429 page in its language", async () => {
    const id = (await t.call("POST", "/api/v1/subscribers", { body: { email: "two-doors@example.com" } })).body.id as string;
    const token = (await t.call("POST", `/api/v1/subscribers/${id}/preference-token`)).body.token as string;
    const api = () => t.call("GET", "/api/v1/preference-center/export", { key: null, headers: { authorization: `Bearer ${token}` } });
    const page = await openPage(id);
    const pageExport = (lang = "en") => pagePost(`${page.path}/export`, { csrf: page.csrf, lang });
    expect((await pageExport()).status).toBe(200);
    expect((await api()).status).toBe(200);
    // The budget (2 an hour) is spent, by either door.
    const refusedPage = await pageExport("de");
    expect(refusedPage.status).toBe(429);
    expect(Number(refusedPage.headers.get("retry-after"))).toBeGreaterThan(0);
    const html = await refusedPage.text();
    expect(html).toContain('<html lang="de">');
    expect(html).toContain("Zu viele Anfragen");
    const refusedApi = await api();
    expect({ status: refusedApi.status, code: refusedApi.body.code }).toEqual({ status: 429, code: "rate_limited" });
    expect(refusedApi.body.detail).toMatch(/^Too many privacy requests for this subscriber: the budget is 2 per 3600 s\. Retry in \d+ s\.$/);
    expect(refusedApi.headers.get("ratelimit-policy")).toMatch(/^2;w=3600;comment="privacy per subscriber", \d+;w=\d+;comment="preference privacy per account and mode"$/);
    // The page's erasure shares the privacy budget: the subscriber is still there.
    expect((await pagePost(`${page.path}/delete`, { csrf: page.csrf })).status).toBe(429);
    expect((await t.call("GET", `/api/v1/subscribers/${id}`)).status).toBe(200);
  });

  it("counts the page's changes against the subscriber's write budget", async () => {
    const tag = (await t.call("POST", "/api/v1/tags", { body: { name: "door-news", is_public: true } })).body.id as string;
    const id = (await t.call("POST", "/api/v1/subscribers", { body: { email: "page-writes@example.com" } })).body.id as string;
    const page = await openPage(id);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await pagePost(`${page.path}/tags/${tag}/${i % 2 === 0 ? "subscribe" : "unsubscribe"}`, { csrf: page.csrf })).status);
    expect(statuses).toEqual([303, 303, 303, 429, 429]);
  });
});

describe("a service's refusal answers its own budget, not the API key's (issue 16 review)", () => {
  // The API key's RateLimit headers go on every answer, set before the request
  // reaches a service. When the service then refuses from its own budget or
  // quota (the test-mode quota, with Retry-After), a 429 that still said the
  // key's `RateLimit-Remaining: 16` beside the quota's `Retry-After: 17280`
  // contradicted itself: its RateLimit headers are the quota's.
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform("rate-limit-quota", { TEST_MODE_DAILY_LIMIT: "2", RATE_LIMIT_SEND: "100/60s" });
  }, 120_000);
  afterAll(() => t?.close());

  it("answers the test-mode quota's 429 with the quota's Retry-After and RateLimit headers, not the key's; the key's admitted sends carry the key's", async () => {
    const template = await t.call("POST", "/api/v1/templates", {
      body: { name: "Quota", slug: "quota", subject: "Hi", category: "transactional", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>" },
    });
    expect(template.status).toBe(201);
    const send = (n: number) => t.call("POST", "/api/v1/emails/send", { body: { template_slug: "quota", to: `quota-${n}@example.com` } });
    for (let n = 0; n < 2; n++) {
      const sent = await send(n);
      expect(sent.status).toBe(202);
      expect(sent.headers.get("ratelimit-policy")).toMatch(/^100;w=60;comment="send per API key"/);
      expect(Number(sent.headers.get("ratelimit-remaining"))).toBeGreaterThan(0);
    }
    const refused = await send(2);
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 429, code: "test_mode_quota_exceeded" });
    // One message comes back every 24 h / 2; the clock is the real one, so "at most".
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(43_200);
    expect(refused.headers.get("ratelimit-policy")).toBe('2;w=86400;comment="test-mode messages per account"');
    expect({ limit: refused.headers.get("ratelimit-limit"), remaining: refused.headers.get("ratelimit-remaining") }).toEqual({ limit: "2", remaining: "0" });
    expect(Number(refused.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(retryAfter);
  });
});
