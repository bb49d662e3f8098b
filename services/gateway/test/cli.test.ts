import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { runCli } from "../src/cli";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    env: { EMAILSVC_URL: h.url, ADMIN_TOKEN, ...env },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  const text = out.join("\n");
  return { code, out: text, err: err.join("\n"), json: text.startsWith("Usage") || !text ? undefined : JSON.parse(text) };
}

describe("emailsvc-admin", () => {
  it("creates and lists accounts, creates, lists and revokes keys", async () => {
    const account = await cli(["accounts", "create", "--name", "CLI Co", "--plan", "professional"]);
    expect(account.code).toBe(0);
    expect(account.json).toMatchObject({ name: "CLI Co", plan: "professional" });

    const accounts = await cli(["accounts", "list"]);
    expect(accounts.json.map((a: { id: string }) => a.id)).toContain(account.json.id);

    const key = await cli(["keys", "create", "--account", account.json.id, "--mode", "test", "--name", "ci"]);
    expect(key.code).toBe(0);
    expect(key.json.key).toMatch(/^sk_test_/);
    expect((await h.request("GET", "/api/v1/tags", { key: key.json.key })).status).toBe(200);

    const keys = await cli(["keys", "list", "--account", account.json.id]);
    expect(keys.json).toEqual([expect.objectContaining({ id: key.json.id, masked: key.json.masked, revoked_at: null })]);
    expect(keys.out).not.toContain(key.json.key);

    const revoked = await cli(["keys", "revoke", "--account", account.json.id, "--key", key.json.id]);
    expect(revoked.code).toBe(0);
    expect(revoked.json.revoked_at).toEqual(expect.any(String));
    expect((await h.request("GET", "/api/v1/tags", { key: key.json.key })).status).toBe(401);
  });

  it("creates an account with its owner's invitation, and invites another member", async () => {
    const account = await cli(["accounts", "create", "--name", "Owned Co", "--owner-email", "owner@owned.example"]);
    expect(account.code).toBe(0);
    expect(account.json.owner_invitation).toMatchObject({ email: "owner@owned.example", role: "owner", url: expect.stringMatching(/\/dashboard\/accept#token=[A-Za-z0-9_-]{43}$/) });
    const invited = await cli(["invitations", "create", "--account", account.json.id, "--email", "dev@owned.example", "--role", "developer"]);
    expect(invited.code).toBe(0);
    expect(invited.json).toMatchObject({ email: "dev@owned.example", role: "developer" });
    // A role that is none is refused.
    const bad = await cli(["invitations", "create", "--account", account.json.id, "--email", "x@owned.example", "--role", "boss"]);
    expect(bad.code).not.toBe(0);
    // Mailed through delivery: the invitation's platform template, made in the account's live mode.
    expect(h.delivery.queued.filter((m) => m.to === "owner@owned.example" || m.to === "dev@owned.example").map((m) => m.templateSlug)).toEqual(["platform-member-invitation", "platform-member-invitation"]);
  });

  it("follows next_cursor to list everything", async () => {
    for (let i = 0; i < 3; i++) await cli(["accounts", "create", "--name", `Many ${i}`]);
    const accounts = await cli(["accounts", "list"]);
    expect(accounts.json.length).toBeGreaterThanOrEqual(4);
  });

  it("explains usage errors with exit code 2", async () => {
    expect(await cli([])).toMatchObject({ code: 2, err: expect.stringContaining("no command given") });
    expect(await cli(["accounts", "create"])).toMatchObject({ code: 2, err: expect.stringContaining("--name is required") });
    expect(await cli(["keys", "create", "--account", "acc_x", "--mode", "prod"])).toMatchObject({ code: 2, err: expect.stringContaining("--mode") });
    expect(await cli(["accounts", "frobnicate"])).toMatchObject({ code: 2, err: expect.stringContaining('unknown command "accounts frobnicate"') });
    expect(await cli(["accounts", "list", "--bogus"])).toMatchObject({ code: 2 });
    expect(await cli(["accounts", "list"], { ADMIN_TOKEN: undefined })).toMatchObject({ code: 2, err: expect.stringContaining("ADMIN_TOKEN") });
  });

  it("reports API failures with the problem's text and exit code 1", async () => {
    const wrong = await cli(["accounts", "list"], { ADMIN_TOKEN: "wrong" });
    expect(wrong).toMatchObject({ code: 1, err: expect.stringContaining("401 Invalid admin token") });
    const missing = await cli(["keys", "list", "--account", "acc_00000000000000000000000000"]);
    expect(missing).toMatchObject({ code: 1, err: expect.stringContaining("404") });
    const plan = await cli(["accounts", "create", "--name", "X", "--plan", "gold"]);
    expect(plan).toMatchObject({ code: 1, err: expect.stringContaining("plan: must be one of") });
  });

  it("says when the gateway cannot be reached", async () => {
    const res = await cli(["accounts", "list"], { EMAILSVC_URL: "http://127.0.0.1:1" });
    expect(res).toMatchObject({ code: 1, err: expect.stringContaining("cannot reach the gateway at http://127.0.0.1:1") });
  });

  it("prints help on --help", async () => {
    expect(await cli(["--help"])).toMatchObject({ code: 0, out: expect.stringContaining("Usage: emailsvc-admin") });
  });

  // The built script, as operators run it (`npm test` builds before testing).
  const built = path.join(__dirname, "..", "dist", "cli.js");
  (existsSync(built) ? it : it.skip)("runs as a script from dist with exit codes", async () => {
    const run = promisify(execFile);
    const env = { ...process.env, EMAILSVC_URL: h.url, ADMIN_TOKEN };
    const { stdout } = await run(process.execPath, [built, "accounts", "create", "--name", "Script"], { env });
    expect(JSON.parse(stdout)).toMatchObject({ name: "Script" });
    await expect(run(process.execPath, [built, "accounts", "list"], { env: { ...env, ADMIN_TOKEN: "wrong" } })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("401"),
    });
  });
});
