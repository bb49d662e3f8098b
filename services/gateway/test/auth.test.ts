import { AccountStore } from "../src/accounts/store";
import { ApiKeyAuthenticator } from "../src/accounts/authenticator";
import { openStore } from "@emailsvc/storage";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

describe("API key", () => {
  it("missing is 401 missing_api_key with WWW-Authenticate", async () => {
    const res = await h.request("GET", "/api/v1/subscribers", { key: null });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("missing_api_key");
    expect(res.headers.get("www-authenticate")).toMatch(/^ApiKey /);
    expect(h.fake.calls.filter((c) => c.method === "listSubscribers")).toHaveLength(0);
  });

  it.each([
    ["malformed", "hello"],
    ["unknown", `sk_test_${"A".repeat(40)}`],
    ["wrong mode prefix", "" /* filled below */],
  ])("%s is 401 invalid_api_key", async (name, key) => {
    const presented = name === "wrong mode prefix" ? h.key.replace("sk_test_", "sk_live_") : key;
    const res = await h.request("GET", "/api/v1/subscribers", { key: presented });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("invalid_api_key");
    expect(res.headers.get("www-authenticate")).toMatch(/^ApiKey /);
  });

  it("an admin token is not an API key", async () => {
    const res = await h.request("GET", "/api/v1/subscribers", { key: null, admin: true });
    expect(res.status).toBe(401);
  });

  it("a revoked key stops working at once on this instance", async () => {
    const created = await h.request("POST", `/admin/v1/accounts/${h.accountId}/api-keys`, { admin: true, body: { mode: "test" } });
    const key = created.body.key;
    expect((await h.request("GET", "/api/v1/tags", { key })).status).toBe(200); // now cached
    const revoked = await h.request("DELETE", `/admin/v1/accounts/${h.accountId}/api-keys/${created.body.id}`, { admin: true });
    expect(revoked.status).toBe(200);
    const res = await h.request("GET", "/api/v1/tags", { key });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("invalid_api_key");
  });
});

describe("API key cache", () => {
  it("reuses a lookup for its TTL only (a key revoked elsewhere works until then)", async () => {
    const store = await openStore({ dbName: "gateway" });
    const accounts = new AccountStore(store);
    let now = 1_000_000;
    const auth = new ApiKeyAuthenticator(accounts, { ttlMs: 5000, now: () => now });
    const account = await accounts.createAccount({ name: "A", plan: "starter" });
    const key = await accounts.createApiKey(account.id, { mode: "live" });
    expect(await auth.authenticate(key.key)).toEqual({ accountId: account.id, mode: "live", keyId: key.id });

    // Revoked through another instance: this one does not know yet.
    await new AccountStore(store).revokeApiKey(account.id, key.id);
    now += 4999;
    expect(await auth.authenticate(key.key)).toBeDefined();
    now += 2;
    expect(await auth.authenticate(key.key)).toBeUndefined();
    await store.close();
  });

  it("holds at most maxEntries keys", async () => {
    const store = await openStore({ dbName: "gateway" });
    const accounts = new AccountStore(store);
    const lookups: string[] = [];
    const counting = Object.assign(Object.create(accounts), {
      findApiKeyByHash: (hash: string) => {
        lookups.push(hash);
        return accounts.findApiKeyByHash(hash);
      },
    }) as AccountStore;
    const auth = new ApiKeyAuthenticator(counting, { maxEntries: 2 });
    const account = await accounts.createAccount({ name: "A", plan: "starter" });
    const keys = await Promise.all([1, 2, 3].map(() => accounts.createApiKey(account.id, { mode: "test" })));
    for (const k of keys) await auth.authenticate(k.key);
    await auth.authenticate(keys[2]!.key); // cached
    await auth.authenticate(keys[0]!.key); // evicted: looked up again
    expect(lookups).toHaveLength(4);
    await store.close();
  });
});

describe("admin token", () => {
  it("missing is 401 with a Bearer challenge", async () => {
    const res = await h.request("GET", "/admin/v1/accounts", { key: null });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("missing_admin_token");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  it.each([["wrong", "nope"], ["prefix of the real one", ADMIN_TOKEN.slice(0, -1)], ["longer", `${ADMIN_TOKEN}x`]])(
    "%s is 401 invalid_admin_token",
    async (_name, token) => {
      const res = await h.request("GET", "/admin/v1/accounts", { admin: token });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("invalid_admin_token");
    },
  );

  it("an API key does not open the admin API", async () => {
    const res = await h.request("GET", "/admin/v1/accounts", { headers: { authorization: `Bearer ${h.key}` }, key: null });
    expect(res.status).toBe(401);
  });

  it("the configured token works, case-insensitive scheme", async () => {
    const res = await h.request("GET", "/admin/v1/accounts", { key: null, headers: { authorization: `bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
  });
});

describe("probes and the document need no credentials", () => {
  it.each(["/healthz", "/readyz", "/api/v1/openapi.json"])("%s", async (path) => {
    expect((await h.request("GET", path, { key: null })).status).toBe(200);
  });
});
