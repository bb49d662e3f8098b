import { createHash, createPrivateKey, randomBytes, sign } from "node:crypto";
import { expectFitsViewport, expectNoAxeViolations, freePort, launchChromium } from "@emailsvc/testing";
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { browserSignIn, createMember, publicCall, sessionCall, signIn, type MemberCredentials } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Passkeys end to end in headless Chromium with a CDP virtual authenticator
// (a platform authenticator holding discoverable credentials, verifying the
// user): registered on the profile page, a sign-in with no password giving a
// working session, its last use shown, removal, and a removed member's
// passkey signing nobody in. The refusals the browser cannot be made to send
// (a replayed answer, another origin, a counter gone back, an unknown
// credential) are signed here with the virtual authenticator's own private key.
// PUBLIC_API_URL names http://localhost:<port>: WebAuthn takes no IP address as
// relying party id, and the server checks the origin exactly.

let browser: Browser;
let t: TestPlatform;
let origin: string;
beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  [browser, t] = await Promise.all([launchChromium(), startTestPlatform("dashboard-passkeys", { ...GENEROUS_RATE_LIMIT_ENV, PUBLIC_API_URL: origin }, { gatewayPort: port })]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

interface Authenticator {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
}

async function withAuthenticator(): Promise<Authenticator> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
  return { context, page, cdp, authenticatorId };
}

const dashboard = (path: string) => `${origin}/dashboard${path}`;
const heading = (page: Page, name: string) => page.getByRole("heading", { level: 1, name }).waitFor();

/** Registers a passkey on the profile page, signed in as `creds`. */
async function registerOnProfile(a: Authenticator, creds: MemberCredentials, name: string): Promise<void> {
  await browserSignIn(a.context, { ...t, url: origin }, creds);
  await a.page.goto(dashboard("/profile"));
  await heading(a.page, "Your profile");
  await a.page.getByText("No passkeys yet.").waitFor();
  await a.page.getByLabel("Passkey name").fill(name);
  await a.page.getByRole("button", { name: "Add a passkey" }).click();
  await a.page.getByRole("cell", { name, exact: true }).waitFor();
}

/** The one credential the authenticator holds: its id (base64url), private key, user handle and count. */
async function heldCredential(a: Authenticator) {
  const { credentials } = await a.cdp.send("WebAuthn.getCredentials", { authenticatorId: a.authenticatorId });
  expect(credentials).toHaveLength(1);
  const c = credentials[0]!;
  return { id: Buffer.from(c.credentialId, "base64").toString("base64url"), privateKey: c.privateKey, userHandle: Buffer.from(c.userHandle ?? "", "base64").toString("base64url"), signCount: c.signCount };
}

const b64url = (bytes: Buffer | string) => Buffer.from(bytes).toString("base64url");

/**
 * An authenticator's answer to sign-in options, made and signed here (what
 * Chromium would send, with the origin and counter chosen by the test).
 */
function assertion(cred: { id: string; privateKey: string; userHandle: string }, challenge: string, opts: { origin: string; counter: number; rpId?: string }) {
  const clientData = Buffer.from(JSON.stringify({ type: "webauthn.get", challenge, origin: opts.origin, crossOrigin: false }));
  const counter = Buffer.alloc(4);
  counter.writeUInt32BE(opts.counter);
  // rpIdHash, flags (user present and verified), counter.
  const authData = Buffer.concat([createHash("sha256").update(opts.rpId ?? "localhost").digest(), Buffer.from([0x05]), counter]);
  const key = createPrivateKey({ key: Buffer.from(cred.privateKey, "base64"), format: "der", type: "pkcs8" });
  // Chromium picks the first algorithm the options offer that it has: Ed25519 (no digest), else ES256.
  const signature = sign(key.asymmetricKeyType === "ed25519" ? null : "sha256", Buffer.concat([authData, createHash("sha256").update(clientData).digest()]), key);
  return {
    id: cred.id,
    rawId: cred.id,
    type: "public-key",
    response: { clientDataJSON: b64url(clientData), authenticatorData: b64url(authData), signature: b64url(signature), userHandle: cred.userHandle },
    clientExtensionResults: {},
  };
}

async function signInOptions(): Promise<{ challengeId: string; challenge: string }> {
  const res = await publicCall(tAtOrigin(), "POST", "/api/v1/session/passkey-options");
  expect(res.status).toBe(200);
  return { challengeId: res.body.challenge_id as string, challenge: res.body.options.challenge as string };
}

const tAtOrigin = (): TestPlatform => ({ ...t, url: origin });

interface AuditItem {
  action: string;
  status: number;
  actor: { type: string; id: string };
}

/** The account's audit log, once `done` holds (entries are written after the answer). */
async function auditLog(creds: MemberCredentials, done: (items: AuditItem[]) => boolean): Promise<AuditItem[]> {
  const session = await signIn(t, creds);
  return eventually(async () => {
    const log = await sessionCall(t, session, "GET", "/api/v1/audit-log?limit=100");
    expect(log.status).toBe(200);
    return log.body.items as AuditItem[];
  }, done);
}

describe("passkeys in the dashboard", () => {
  let admin: MemberCredentials;
  let a: Authenticator;

  it("registers a passkey on the profile page, and signs in with it on the sign-in page without a password", async () => {
    admin = await createMember(t, "admin");
    a = await withAuthenticator();
    await registerOnProfile(a, admin, "Test laptop");
    const row = a.page.getByRole("row").filter({ hasText: "Test laptop" });
    await row.getByText("Never").waitFor();
    await expectNoAxeViolations(a.page);

    // Sign out through the top bar: the cookie goes.
    await a.page.getByRole("button", { name: "Sign out", exact: true }).click();
    await heading(a.page, "Sign in");
    expect((await a.context.cookies()).filter((c) => c.name === "emailsvc_session")).toEqual([]);
    await expectNoAxeViolations(a.page);

    // No address, no password: the authenticator offers the passkey it holds.
    await a.page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await heading(a.page, "Overview");
    expect(await a.page.getByLabel("Password").count()).toBe(0);
    expect((await a.context.cookies()).filter((c) => c.name === "emailsvc_session")).toHaveLength(1);

    // The session works: a page loads, and a write with the session's CSRF token succeeds.
    const written = await a.page.evaluate(async () => {
      const session = (await (await fetch("/api/v1/session")).json()) as { csrf_token: string; member: { email: string } };
      const created = await fetch("/api/v1/api-keys", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": session.csrf_token, "x-mode": "test" }, body: JSON.stringify({ mode: "test", name: "after passkey" }) });
      return { email: session.member.email, status: created.status };
    });
    expect(written).toEqual({ email: admin.email, status: 201 });

    // Its last use shows on the profile.
    await a.page.goto(dashboard("/profile"));
    await heading(a.page, "Your profile");
    await expect(row.getByText("Never").count()).resolves.toBe(0);
    expect(await row.locator("td").nth(2).innerText()).toMatch(/\d/);
    await expectNoAxeViolations(a.page);
    // Readable on a 360 px phone.
    await a.page.setViewportSize({ width: 360, height: 740 });
    await expectFitsViewport(a.page);
    await a.page.setViewportSize({ width: 1280, height: 900 });

    // The account's audit log names the passkey sign-in, as a member's.
    const items = await auditLog(admin, (entries) => entries.some((e) => e.action === "createSessionWithPasskey"));
    expect(items).toContainEqual(expect.objectContaining({ action: "createSessionWithPasskey", status: 201, actor: expect.objectContaining({ type: "member", id: admin.memberId }) }));
  });

  it("refuses a replayed answer, another origin, a counter gone back, an unknown credential, and a challenge of a registration", async () => {
    const cred = await heldCredential(a);
    const stored = (await sessionCall(t, await signIn(t, admin), "GET", "/api/v1/passkeys")).body.items as Array<{ id: string }>;
    expect(stored).toHaveLength(1);

    // A good answer, signed here, is accepted (so the refusals below are the checks', not the signing's).
    let options = await signInOptions();
    const good = { challenge_id: options.challengeId, credential: assertion(cred, options.challenge, { origin, counter: cred.signCount + 10 }) };
    const accepted = await publicCall(tAtOrigin(), "POST", "/api/v1/session/passkey", good);
    expect(accepted.status).toBe(201);
    expect(accepted.body.member.id).toBe(admin.memberId);
    expect(accepted.headers.get("set-cookie")).toMatch(/^emailsvc_session=/);

    const refused = async (body: unknown) => {
      const res = await publicCall(tAtOrigin(), "POST", "/api/v1/session/passkey", body);
      expect({ status: res.status, code: res.body.code, cookie: res.headers.get("set-cookie") }).toEqual({ status: 401, code: "passkey_not_accepted", cookie: null });
    };
    // The same answer again: its challenge was used.
    await refused(good);
    // Another origin.
    options = await signInOptions();
    await refused({ challenge_id: options.challengeId, credential: assertion(cred, options.challenge, { origin: "http://localhost:1", counter: cred.signCount + 20 }) });
    // Another relying party.
    options = await signInOptions();
    await refused({ challenge_id: options.challengeId, credential: assertion(cred, options.challenge, { origin, counter: cred.signCount + 20, rpId: "example.com" }) });
    // The counter went back (a cloned authenticator).
    options = await signInOptions();
    await refused({ challenge_id: options.challengeId, credential: assertion(cred, options.challenge, { origin, counter: cred.signCount + 5 }) });
    // A refused attempt on a member's passkey is in their account's audit log.
    const refusedEntry = (await auditLog(admin, (items) => items.some((e) => e.action === "createSessionWithPasskey" && e.status === 401))).find((e) => e.status === 401 && e.action === "createSessionWithPasskey");
    expect(refusedEntry?.actor).toMatchObject({ type: "member", id: admin.memberId });
    // An unknown credential.
    options = await signInOptions();
    await refused({ challenge_id: options.challengeId, credential: assertion({ ...cred, id: b64url(randomBytes(16)) }, options.challenge, { origin, counter: cred.signCount + 30 }) });
    // A challenge that is not a sign-in's (a registration's, of a session).
    const reg = await sessionCall(t, await signIn(t, admin), "POST", "/api/v1/passkeys/registration-options");
    expect(reg.status).toBe(200);
    await refused({ challenge_id: reg.body.challenge_id, credential: assertion(cred, reg.body.options.challenge as string, { origin, counter: cred.signCount + 40 }) });
    // None of these moved the stored counter: the good one still comes after.
    options = await signInOptions();
    expect((await publicCall(tAtOrigin(), "POST", "/api/v1/session/passkey", { challenge_id: options.challengeId, credential: assertion(cred, options.challenge, { origin, counter: cred.signCount + 11 }) })).status).toBe(201);

    // A registration's answer for a challenge of another session is refused.
    const other = await sessionCall(t, await signIn(t, admin), "POST", "/api/v1/passkeys", {
      body: { challenge_id: reg.body.challenge_id, name: "stolen", credential: { id: "x", rawId: "x", type: "public-key", response: {} } },
    });
    expect({ status: other.status, code: other.body.code }).toEqual({ status: 400, code: "invalid_passkey_registration" });
  });

  it("a removed passkey signs nobody in", async () => {
    await a.page.goto(dashboard("/profile"));
    await heading(a.page, "Your profile");
    await a.page.getByRole("button", { name: "Remove passkey Test laptop" }).click();
    await a.page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await a.page.getByText("No passkeys yet.").waitFor();
    await a.page.getByRole("button", { name: "Sign out", exact: true }).click();
    await heading(a.page, "Sign in");
    // The authenticator still offers it; the platform no longer knows it.
    await a.page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await a.page.getByRole("alert").getByText("The passkey was not accepted").waitFor();
    expect((await a.context.cookies()).filter((c) => c.name === "emailsvc_session")).toEqual([]);
    await expectNoAxeViolations(a.page);
    await a.context.close();
  });

  it("a removed member's passkey signs nobody in", async () => {
    const viewer = await createMember(t, "viewer");
    const v = await withAuthenticator();
    await registerOnProfile(v, viewer, "Viewer phone");
    const cred = await heldCredential(v);
    const removed = await sessionCall(t, await signIn(t, admin), "DELETE", `/api/v1/members/${viewer.memberId}`);
    expect(removed.status).toBe(204);
    await v.context.clearCookies();
    await v.page.goto(dashboard("/sign-in"));
    await heading(v.page, "Sign in");
    await v.page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await v.page.getByRole("alert").getByText("The passkey was not accepted").waitFor();
    const options = await signInOptions();
    const res = await publicCall(tAtOrigin(), "POST", "/api/v1/session/passkey", { challenge_id: options.challengeId, credential: assertion(cred, options.challenge, { origin, counter: cred.signCount + 1 }) });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: "passkey_not_accepted" });
    await v.context.close();
  });
});
