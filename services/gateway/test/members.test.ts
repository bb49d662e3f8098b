import { openStore } from "@emailsvc/storage";
import { hashPassword, verifyPassword } from "../src/members/passwords";
import { MemberStore } from "../src/members/store";
import { isTimeZone, periodStarts } from "../src/resources/overview/zone";
import { READS_BY_POST, requiredRole, ROLE_RULES, roleAtLeast, ROLES } from "../src/members/roles";
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
      // Reads are a viewer's; a change needs more, except the few POSTs that only read, a member's own sign-out and own passkeys.
      const readOnly = [...READS_BY_POST, "deleteSession", "deleteAllSessions", "createPasskeyRegistrationOptions", "createPasskey", "deletePasskey"];
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

describe("sessions in the store", () => {
  it("end 12 hours after their last use and 7 days after sign-in, and with their member", async () => {
    const store = await openStore({ dbName: "gateway" });
    let now = Date.parse("2026-11-01T08:00:00Z");
    const members = new MemberStore(store, () => new Date(now));
    await members.ensureIndexes();
    try {
      const member = await members.createMember({ accountId: "acc_01jd3x0k8m7y6t5r4q3p2n1m0k", email: "Idle@Example.com", name: "I", role: "viewer", passwordHash: "x" });
      expect(member.email).toBe("idle@example.com");
      const { token } = await members.createSession(member, { ip: "", userAgent: "" });
      // Used every 11 hours: alive, until 7 days after sign-in.
      for (let i = 0; i < 15; i++) {
        now += 11 * 3_600_000;
        expect({ hour: (i + 1) * 11, alive: (await members.sessionByToken(token)) !== undefined }).toEqual({ hour: (i + 1) * 11, alive: true });
      }
      now += 11 * 3_600_000; // 176 h: past the 168 h of a session's life
      expect(await members.sessionByToken(token)).toBeUndefined();

      const idle = await members.createSession(member, { ip: "", userAgent: "" });
      now += 12 * 3_600_000;
      expect(await members.sessionByToken(idle.token)).toBeUndefined();

      const removed = await members.createSession(member, { ip: "", userAgent: "" });
      expect(await members.sessionByToken(removed.token)).toBeDefined();
      await members.removeMember(member.accountId, member.id);
      expect(await members.sessionByToken(removed.token)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it("die on another gateway sharing the store once its cache of them lapses (2 s), after the member's removal", async () => {
    const store = await openStore({ dbName: "gateway" });
    const a = await startHarness({ store });
    const b = await startHarness({ store });
    try {
      const member = await a.running.gateway.members.createMember({ accountId: a.accountId, email: "shared@example.com", name: "S", role: "viewer", passwordHash: await hashPassword("a long enough password") });
      const signedIn = await a.request("POST", "/api/v1/session", { key: null, body: { email: "shared@example.com", password: "a long enough password" } });
      const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
      // B has it in its cache now.
      expect((await b.request("GET", "/api/v1/session", { key: null, headers: { cookie } })).status).toBe(200);
      await a.running.gateway.members.removeMember(a.accountId, member.id);
      let status = 200;
      const started = Date.now();
      while (status === 200 && Date.now() - started < 10_000) {
        status = (await b.request("GET", "/api/v1/session", { key: null, headers: { cookie } })).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe(401);
    } finally {
      await a.close();
      await b.close();
      await store.close();
    }
  });
});
