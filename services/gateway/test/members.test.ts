import { hashPassword, verifyPassword } from "../src/members/passwords";
import { requiredRole, ROLE_RULES, roleAtLeast, ROLES } from "../src/members/roles";
import { buildOpenApiDocument, type HttpMethod } from "../src/openapi";
import { loadRateLimitConfig } from "../src/ratelimit/config";
import { GENEROUS_RATE_LIMIT_ENV, startHarness, type Harness } from "./support/harness";

// The gateway's members over fakes of the services: passwords, the role
// table against the whole document, the cookie's attributes (http and
// https), and the sign-in budgets. The flows through the real platform are
// in embedded/test/members.test.ts.

describe("passwords", () => {
  it("are stored as a self-describing scrypt string with a fresh salt, and verify only the same password", async () => {
    const a = await hashPassword("correct horse battery");
    const b = await hashPassword("correct horse battery");
    expect(a).toMatch(/^scrypt\$N=32768,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword("correct horse battery", a)).toBe(true);
    expect(await verifyPassword("correct horse batterY", a)).toBe(false);
    expect(await verifyPassword("correct horse battery", "garbage")).toBe(false);
    // Other parameters verify by what the string says (parameters may change).
    const cheap = a.replace("N=32768", "N=1024");
    expect(await verifyPassword("correct horse battery", cheap)).toBe(false);
  });
});

describe("roles", () => {
  const doc = buildOpenApiDocument();
  const operations = Object.values(doc.paths).flatMap((item) => Object.entries(item).map(([method, op]) => ({ method: method as HttpMethod, op: op! })));
  const sessionOps = operations.filter(({ op }) => (op.security ?? doc.security).some((r) => "Session" in r));

  it("has a rule for every operation a session reaches, and names no operation that is not one", () => {
    expect(sessionOps.length).toBeGreaterThan(80);
    const ids = new Set(sessionOps.map(({ op }) => op.operationId));
    for (const id of Object.keys(ROLE_RULES)) expect({ id, known: ids.has(id) }).toEqual({ id, known: true });
    for (const { method, op } of sessionOps) {
      const role = requiredRole(op.operationId, method);
      expect(ROLES).toContain(role);
      // Reads are a viewer's; a change needs more, except the few POSTs that only read and a member's own sign-out.
      const readOnly = ["previewTemplate", "previewTemplateDraft", "countRecipientsOfFilter", "deleteSession", "deleteAllSessions"];
      if (method !== "get" && !readOnly.includes(op.operationId)) expect({ op: op.operationId, role: roleAtLeast(role, "developer") }).toEqual({ op: op.operationId, role: true });
    }
  });

  it("gives developers keys, webhooks, templates, sending domains and sends, and nothing of the audience", () => {
    const developer = sessionOps.filter(({ method, op }) => method !== "get" && requiredRole(op.operationId, method) === "developer").map(({ op }) => op.operationId);
    expect(developer.sort()).toEqual(
      [
        "createKey", "revokeKey", "createTemplate", "updateTemplate", "deleteTemplate", "sendEmail", "sendEmailBatch",
        "createSenderDomain", "deleteSenderDomain", "verifySenderDomain", "createWebhook", "updateWebhook", "deleteWebhook", "rotateWebhookSecret", "replayWebhookDelivery",
      ].sort(),
    );
    expect(requiredRole("createSubscriber", "post")).toBe("admin");
    expect(requiredRole("createInvitation", "post")).toBe("admin");
    expect(requiredRole("listInvitations", "get")).toBe("admin");
    expect(requiredRole("listSubscribers", "get")).toBe("viewer");
  });

  it("documents the Session scheme (with its X-CSRF-Token and X-Mode) on every API-key operation, and makes keys and people session-only", () => {
    expect(doc.components.securitySchemes.Session).toMatchObject({ type: "apiKey", in: "cookie", name: "emailsvc_session", description: expect.stringMatching(/X-CSRF-Token.*X-Mode: live\|test/) });
    expect(buildOpenApiDocument({ serverUrl: "https://api.example.com" }).components.securitySchemes.Session).toMatchObject({ name: "__Host-emailsvc_session" });
    for (const { op } of operations) {
      const security = op.security ?? doc.security;
      if (security.some((r) => "ApiKey" in r)) expect({ op: op.operationId, session: security.some((r) => "Session" in r) }).toEqual({ op: op.operationId, session: true });
    }
    for (const id of ["listKeys", "createKey", "revokeKey", "listMembers", "createInvitation", "getSession"]) {
      const found = operations.find(({ op }) => op.operationId === id)!;
      expect({ id, security: found.op.security }).toEqual({ id, security: [{ Session: [] }] });
      expect({ id, forbidden: "403" in found.op.responses }).toEqual({ id, forbidden: true });
    }
  });
});

describe("sign-in over the gateway", () => {
  let h: Harness;
  const password = "a long enough password";
  afterEach(async () => {
    await h?.close();
  });

  async function member(email: string, role: "owner" | "viewer" = "owner") {
    return h.running.gateway.members.createMember({ accountId: h.accountId, email, name: "M", role, passwordHash: await hashPassword(password) });
  }

  const signIn = (email: string, pw = password, headers: Record<string, string> = {}) =>
    h.request("POST", "/api/v1/session", { key: null, body: { email, password: pw }, headers });

  it("sets an HttpOnly, SameSite=Strict cookie (Secure and __Host- over https), and refuses a wrong password and an unknown address alike", async () => {
    h = await startHarness();
    await member("ada@example.com");
    const ok = await signIn("ADA@example.com");
    expect(ok.status).toBe(201);
    expect(ok.headers.get("set-cookie")).toMatch(/^emailsvc_session=[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(ok.headers.get("cache-control")).toBe("no-store");
    expect(ok.body).toMatchObject({ member: { email: "ada@example.com", role: "owner" }, account: { id: h.accountId } });

    const wrong = await signIn("ada@example.com", "not the password");
    const unknown = await signIn("nobody@example.com");
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(wrong.body.code).toBe("invalid_credentials");
    expect({ ...wrong.body, request_id: "" }).toEqual({ ...unknown.body, request_id: "" });
    await h.close();

    h = await startHarness({ publicUrl: "https://api.example.com" });
    await member("ada@example.com");
    const secure = await signIn("ada@example.com");
    expect(secure.headers.get("set-cookie")).toMatch(/^__Host-emailsvc_session=[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Strict; Secure$/);
    const cookie = secure.headers.get("set-cookie")!.split(";")[0]!;
    expect((await h.request("GET", "/api/v1/session", { key: null, headers: { cookie } })).status).toBe(200);
    // The plain name is not this gateway's cookie.
    expect((await h.request("GET", "/api/v1/session", { key: null, headers: { cookie: cookie.replace("__Host-", "") } })).body.code).toBe("missing_session");
  });

  it("locks an address after its failed sign-ins, even for the right password, and tells when to retry", async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig({ ...GENEROUS_RATE_LIMIT_ENV, RATE_LIMIT_SIGN_IN_FAILURES: "3/15m" }) });
    await member("grace@example.com");
    await member("linus@example.com");
    for (let i = 0; i < 3; i++) expect((await signIn("grace@example.com", `guess number ${i}`)).status).toBe(401);
    const locked = await signIn("grace@example.com", "guess number 4");
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe("rate_limited");
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // The right password too: guessing stops here.
    expect((await signIn("grace@example.com")).status).toBe(429);
    // Another address is not locked by it.
    expect((await signIn("linus@example.com")).status).toBe(201);
  });

  it("locks a client address that spent its failed-authentication budget, for sign-ins", async () => {
    h = await startHarness({ rateLimit: loadRateLimitConfig({ ...GENEROUS_RATE_LIMIT_ENV, RATE_LIMIT_AUTH_FAILURES: "2/1h" }) });
    await member("ada@example.com");
    expect((await signIn("x1@example.com")).status).toBe(401);
    expect((await signIn("x2@example.com")).status).toBe(401);
    expect((await signIn("x3@example.com")).status).toBe(429);
    expect((await signIn("ada@example.com")).status).toBe(429);
  });
});

describe("overview periods", () => {
  it("start at local midnight and on the first of the month, across DST changes", () => {
    const { periodStarts, isTimeZone } = require("../src/resources/overview/zone") as typeof import("../src/resources/overview/zone");
    // 2026-03-29 10:00 UTC: Zurich moved to summer time at 01:00 UTC that day; the day began at 23:00 UTC before it.
    const starts = periodStarts("Europe/Zurich", Date.UTC(2026, 2, 29, 10));
    expect(new Date(starts.today).toISOString()).toBe("2026-03-28T23:00:00.000Z");
    expect(new Date(starts.month).toISOString()).toBe("2026-02-28T23:00:00.000Z");
    // Summer time: midnight is 22:00 UTC.
    expect(new Date(periodStarts("Europe/Zurich", Date.UTC(2026, 6, 15, 0, 30)).today).toISOString()).toBe("2026-07-14T22:00:00.000Z");
    expect(new Date(periodStarts("America/New_York", Date.UTC(2026, 10, 1, 3)).today).toISOString()).toBe("2026-10-31T04:00:00.000Z");
    expect(new Date(periodStarts("UTC", Date.UTC(2026, 10, 27, 3, 4, 5)).month).toISOString()).toBe("2026-11-01T00:00:00.000Z");
    expect(isTimeZone("Asia/Kolkata")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });
});
