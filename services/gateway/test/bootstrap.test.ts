import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openStore } from "@emailsvc/storage";
import { bootstrapDevelopment } from "../src/accounts/bootstrap";
import { AccountStore } from "../src/accounts/store";
import { startHarness } from "./support/harness";

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "gateway-bootstrap-"));
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

describe("bootstrapDevelopment", () => {
  it("creates an admin token, a Development account and a test key once, kept across restarts", async () => {
    let store = await openStore({ dataDir, dbName: "gateway" });
    const first = await bootstrapDevelopment(store);
    expect(first).toStrictEqual({
      adminToken: expect.stringMatching(/^adm_[0-9A-Za-z]{40}$/),
      accountId: expect.stringMatching(/^acc_/),
      testKey: expect.stringMatching(/^sk_test_[0-9A-Za-z]{40}$/),
      setupUrl: expect.stringMatching(/^http:\/\/localhost:8080\/dashboard\/setup#token=[A-Za-z0-9_-]{43}$/),
    });
    const account = await new AccountStore(store).getAccount(first!.accountId);
    expect(account).toMatchObject({ name: "Development", plan: "professional" });
    expect(await bootstrapDevelopment(store)).toBeUndefined();
    await store.close();

    // A later start: nothing new, and the printed credentials still work.
    store = await openStore({ dataDir, dbName: "gateway" });
    expect(await bootstrapDevelopment(store)).toBeUndefined();
    const h = await startHarness({ store, adminToken: undefined });
    try {
      expect((await h.request("GET", "/admin/v1/accounts", { admin: first!.adminToken })).status).toBe(200);
      expect((await h.request("GET", "/api/v1/tags", { key: first!.testKey })).status).toBe(200);
      expect(h.fake.lastCall!.context.tenant).toEqual({ accountId: first!.accountId, mode: "test" });
    } finally {
      await h.close();
      await store.close();
    }
  });

  it("with ADMIN_TOKEN set, only that token works, not the stored one", async () => {
    const store = await openStore({ dataDir, dbName: "gateway" });
    const dev = await bootstrapDevelopment(store);
    const h = await startHarness({ store, adminToken: "configured-token-xyz" });
    try {
      expect((await h.request("GET", "/admin/v1/accounts", { admin: dev!.adminToken! })).status).toBe(401);
      expect((await h.request("GET", "/admin/v1/accounts", { admin: "configured-token-xyz" })).status).toBe(200);
    } finally {
      await h.close();
      await store.close();
    }
  });

  it("without ADMIN_TOKEN and without a stored token, the admin API is closed", async () => {
    const h = await startHarness({ adminToken: undefined });
    try {
      expect((await h.request("GET", "/admin/v1/accounts", { admin: "anything" })).status).toBe(401);
    } finally {
      await h.close();
    }
  });

  it("makes nothing on a store that already has accounts", async () => {
    const store = await openStore({ dbName: "gateway" });
    await new AccountStore(store).createAccount({ name: "Existing", plan: "starter" });
    expect(await bootstrapDevelopment(store)).toBeUndefined();
    expect(await new AccountStore(store).adminTokenHash()).toBeUndefined();
    await store.close();
  });

  it("replaces a stored token no one saw when a first start failed before creating the account", async () => {
    const store = await openStore({ dbName: "gateway" });
    const accounts = new AccountStore(store);
    await accounts.setAdminTokenHash("0".repeat(64));
    const made = await bootstrapDevelopment(store);
    expect(made).toBeDefined();
    expect(await accounts.adminTokenHash()).not.toBe("0".repeat(64));
    await store.close();
  });
});
