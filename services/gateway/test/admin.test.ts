import { startHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const admin = (method: string, path: string, body?: unknown) => h.request(method, path, { admin: true, body });

describe("accounts", () => {
  it("creates an account (plan defaults to starter), gets and lists it", async () => {
    const created = await admin("POST", "/admin/v1/accounts", { name: "Acme" });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.stringMatching(/^acc_[0-9a-z]{26}$/), name: "Acme", plan: "starter", created_at: expect.any(String) });
    expect((await admin("GET", `/admin/v1/accounts/${created.body.id}`)).body).toEqual(created.body);
    const list = await admin("GET", "/admin/v1/accounts");
    expect(list.body.items).toContainEqual(created.body);
    expect(list.body.next_cursor).toBeNull();
  });

  it("takes plan professional and refuses other plans", async () => {
    expect((await admin("POST", "/admin/v1/accounts", { name: "Pro", plan: "professional" })).body.plan).toBe("professional");
    const bad = await admin("POST", "/admin/v1/accounts", { name: "X", plan: "gold" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe("plan");
  });

  it("refuses a missing name and read-only fields", async () => {
    expect((await admin("POST", "/admin/v1/accounts", {})).body.errors).toEqual([{ field: "name", message: "is required" }]);
    expect((await admin("POST", "/admin/v1/accounts", { name: "A", id: "acc_x" })).body.errors).toEqual([{ field: "id", message: "is read-only" }]);
  });

  it("pages the account list and refuses a made-up cursor", async () => {
    for (let i = 0; i < 3; i++) await admin("POST", "/admin/v1/accounts", { name: `Page ${i}` });
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const res: Awaited<ReturnType<typeof admin>> = await admin("GET", `/admin/v1/accounts?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      all.push(...res.body.items.map((a: { id: string }) => a.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(new Set(all).size).toBe(all.length);
    expect(all).toEqual([...all].sort());
    const bad = await admin("GET", "/admin/v1/accounts?cursor=bm9wZQ");
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: "cursor", message: "is not a cursor of this list" }]);
  });

  it("is 404 for an unknown account", async () => {
    expect((await admin("GET", "/admin/v1/accounts/acc_00000000000000000000000000")).status).toBe(404);
    expect((await admin("GET", "/admin/v1/accounts/whatever")).status).toBe(404);
  });
});

describe("API key lifecycle", () => {
  it("shows the key once, lists it masked, and revokes it", async () => {
    const account = (await admin("POST", "/admin/v1/accounts", { name: "Keys" })).body;
    const created = await admin("POST", `/admin/v1/accounts/${account.id}/api-keys`, { mode: "live", name: "prod" });
    expect(created.status).toBe(201);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const key: string = created.body.key;
    expect(key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^key_/),
      account_id: account.id,
      mode: "live",
      name: "prod",
      masked: `sk_live_…${key.slice(-4)}`,
      created_at: expect.any(String),
      revoked_at: null,
      key,
    });

    // The key works, with the account and mode it was made for.
    expect((await h.request("GET", "/api/v1/tags", { key })).status).toBe(200);
    expect(h.fake.lastCall!.context.tenant).toEqual({ accountId: account.id, mode: "live" });

    const list = await admin("GET", `/admin/v1/accounts/${account.id}/api-keys`);
    expect(list.status).toBe(200);
    const { key: _shownOnce, ...masked } = created.body;
    expect(list.body).toEqual({ items: [masked], next_cursor: null });
    expect(list.text).not.toContain(key.slice(8, -4));

    const revoked = await admin("DELETE", `/admin/v1/accounts/${account.id}/api-keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    expect(revoked.body.key).toBeUndefined();
    expect((await h.request("GET", "/api/v1/tags", { key })).status).toBe(401);

    // Revoking again changes nothing.
    const again = await admin("DELETE", `/admin/v1/accounts/${account.id}/api-keys/${created.body.id}`);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    const listed = (await admin("GET", `/admin/v1/accounts/${account.id}/api-keys`)).body.items[0];
    expect(listed.revoked_at).toBe(revoked.body.revoked_at);
  });

  it("makes test keys with the sk_test_ prefix and a null name by default", async () => {
    const res = await admin("POST", `/admin/v1/accounts/${h.accountId}/api-keys`, { mode: "test" });
    expect(res.body.key).toMatch(/^sk_test_/);
    expect(res.body.name).toBeNull();
  });

  it("stores only a hash of the key", async () => {
    const res = await admin("POST", `/admin/v1/accounts/${h.accountId}/api-keys`, { mode: "test" });
    const docs = await h.store.collection("api_keys").find({});
    expect(JSON.stringify(docs)).not.toContain(res.body.key);
    expect(JSON.stringify(docs)).not.toContain(res.body.key.slice(8, 36));
  });

  it("refuses a bad mode, unknown accounts and another account's key", async () => {
    expect((await admin("POST", `/admin/v1/accounts/${h.accountId}/api-keys`, { mode: "prod" })).status).toBe(400);
    expect((await admin("POST", `/admin/v1/accounts/${h.accountId}/api-keys`, {})).body.errors).toEqual([{ field: "mode", message: "is required" }]);
    expect((await admin("POST", "/admin/v1/accounts/acc_00000000000000000000000000/api-keys", { mode: "test" })).status).toBe(404);
    expect((await admin("GET", "/admin/v1/accounts/acc_00000000000000000000000000/api-keys")).status).toBe(404);
    const other = (await admin("POST", "/admin/v1/accounts", { name: "Other" })).body;
    expect((await admin("DELETE", `/admin/v1/accounts/${other.id}/api-keys/${h.keyId}`)).status).toBe(404);
    // The harness key still works: nothing was revoked.
    expect((await h.request("GET", "/api/v1/tags")).status).toBe(200);
  });
});
