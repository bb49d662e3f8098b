import { requiredRole } from "../../services/gateway/src/members/roles";
import type { HttpMethod, OpenApiDocument } from "../../services/gateway/src/openapi";
import { createMember, publicCall, sessionCall, sessionCookieOf, signIn, type DashboardSession } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The dashboard's people through the real platform: members made by
// invitation, signed in with the session cookie, held to their role by the
// API on every operation, and their sessions ended by sign-out, sign-out
// everywhere and removal. The invitation and reset links are read from the
// sandboxed mail of the account's live mode, as the member would get them.

describe.each(["embedded", "mongodb"] as const)("dashboard members (%s)", (store) => {
  let t: TestPlatform;
  let owner: { email: string; password: string; memberId: string };
  let ownerSession: DashboardSession;
  beforeAll(async () => {
    t = await startTestPlatform(`members-${store}`, undefined, { mongo: store === "mongodb" });
    owner = await createMember(t, "owner");
    ownerSession = await signIn(t, owner);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** The link to the dashboard's `page` in the sandboxed mail to `address` in live mode, read with the owner's session. */
  async function mailedLink(address: string, page: string): Promise<string> {
    const pattern = new RegExp(`href="([^"]*/dashboard/${page}#token[^"]+)"`);
    const links = await eventually(
      async () => {
        const sent = ((await sessionCall(t, ownerSession, "GET", "/api/v1/emails?limit=500")).body.items as Array<{ id: string; to: string; status: string }>).filter((e) => e.to === address && e.status === "sent");
        const found: string[] = [];
        for (const email of sent) {
          const message = await sessionCall(t, ownerSession, "GET", `/api/v1/emails/${email.id}/sandbox`);
          expect(message.status).toBe(200);
          const href = pattern.exec(message.body.html as string)?.[1];
          if (href) found.push(href.replace(/&#x3D;/g, "="));
        }
        return found;
      },
      (found) => found.length > 0,
    );
    expect(links).toHaveLength(1);
    return links[0]!;
  }

  it("signs in, answers a wrong password and an unknown address alike, and shows the session", async () => {
    const session = await publicCall(t, "POST", "/api/v1/session", { email: owner.email.toUpperCase(), password: owner.password });
    expect(session.status).toBe(201);
    expect(session.headers.get("set-cookie")).toMatch(/^emailsvc_session=[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(session.body).toMatchObject({ member: { id: owner.memberId, email: owner.email, role: "owner" }, account: { id: t.accountId } });

    const wrong = await publicCall(t, "POST", "/api/v1/session", { email: owner.email, password: "not the password at all" });
    const unknown = await publicCall(t, "POST", "/api/v1/session", { email: "nobody-here@example.com", password: owner.password });
    expect([wrong.status, wrong.body.code, unknown.status, unknown.body.code]).toEqual([401, "invalid_credentials", 401, "invalid_credentials"]);
    expect(wrong.body.detail).toBe(unknown.body.detail);
    expect(wrong.headers.get("set-cookie")).toBeNull();

    const read = await sessionCall(t, ownerSession, "GET", "/api/v1/session");
    expect(read.status).toBe(200);
    expect(read.body.csrf_token).toBe(ownerSession.csrf);
    expect((await publicCall(t, "GET", "/api/v1/session")).body.code).toBe("missing_session");
    expect((await publicCall(t, "GET", "/api/v1/session", undefined, { cookie: "emailsvc_session=" + "A".repeat(43) })).body.code).toBe("invalid_session");
  });

  it("refuses a change without the CSRF token or with another, takes X-Mode, and refuses a bad one", async () => {
    const tag = { name: `csrf-${store}` };
    const none = await sessionCall(t, ownerSession, "POST", "/api/v1/tags", { body: tag, noCsrf: true });
    expect([none.status, none.body.code]).toEqual([403, "csrf_failed"]);
    const other = await sessionCall(t, ownerSession, "POST", "/api/v1/tags", { body: tag, headers: { "x-csrf-token": "x".repeat(43) } });
    expect([other.status, other.body.code]).toEqual([403, "csrf_failed"]);
    expect((await t.call("GET", "/api/v1/tags")).body.items).toEqual([]);

    // Test mode with the session is what the test key sees; live stays apart.
    const created = await sessionCall(t, ownerSession, "POST", "/api/v1/tags", { body: tag, mode: "test" });
    expect(created.status).toBe(201);
    expect(((await t.call("GET", "/api/v1/tags")).body.items as Array<{ id: string }>).map((x) => x.id)).toEqual([created.body.id]);
    expect((await sessionCall(t, ownerSession, "GET", "/api/v1/tags", { mode: "live" })).body.items).toEqual([]);
    expect((await sessionCall(t, ownerSession, "GET", "/api/v1/tags", { mode: "test" })).body.items).toHaveLength(1);
    const bad = await sessionCall(t, ownerSession, "GET", "/api/v1/tags", { headers: { "x-mode": "staging" } });
    expect([bad.status, bad.body.code]).toEqual([400, "validation_failed"]);
    // A read needs no CSRF token.
    expect((await sessionCall(t, ownerSession, "GET", "/api/v1/tags", { noCsrf: true })).status).toBe(200);
    // The services record the member as the actor of what they change.
    const made = await sessionCall(t, ownerSession, "POST", "/api/v1/subscribers", { body: { email: `made-by-owner-${store}@example.com` }, mode: "test" });
    expect(made.status).toBe(201);
    const events = await eventually(
      async () => (await sessionCall(t, ownerSession, "GET", `/api/v1/subscribers/${made.body.id}/events`, { mode: "test" })).body.items as Array<{ actor: string }>,
      (items) => items.length > 0,
    );
    expect(events[0]!.actor).toBe(`member:${owner.memberId}`);
  });

  it("refuses a viewer every change the API offers, with the role needed, and changes nothing", async () => {
    const viewer = await signIn(t, await createMember(t, "viewer"));
    const doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as OpenApiDocument;
    let refused = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item) as Array<[HttpMethod, NonNullable<(typeof item)[HttpMethod]>]>) {
        if (!(op.security ?? doc.security).some((r) => "Session" in r)) continue;
        if (requiredRole(op.operationId, method) === "viewer") continue;
        // Ids that exist nowhere: the role is checked before anything is looked up or read.
        const concrete = path.replace(/\{[^}]+\}/g, "x_unknown");
        const res = await sessionCall(t, viewer, method.toUpperCase(), concrete, method === "get" ? {} : { body: {} });
        expect({ op: op.operationId, status: res.status, code: res.body.code }).toEqual({ op: op.operationId, status: 403, code: "role_forbidden" });
        expect(res.body.detail).toMatch(/needs the role (developer|admin|owner)/);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(40);
    // Reads are a viewer's.
    expect((await sessionCall(t, viewer, "GET", "/api/v1/subscribers")).status).toBe(200);
    expect((await sessionCall(t, viewer, "GET", "/api/v1/api-keys")).status).toBe(200);
  });

  it("lets a developer write templates and keys (the key shown once) but not subscribers; an API key cannot mint keys", async () => {
    const developer = await signIn(t, await createMember(t, "developer"));
    const template = await sessionCall(t, developer, "POST", "/api/v1/templates", {
      mode: "test",
      body: { name: "Dev", slug: `dev-${store}`, category: "transactional", subject: "Hi", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>" },
    });
    expect(template.body).toMatchObject({ slug: `dev-${store}` });
    const key = await sessionCall(t, developer, "POST", "/api/v1/api-keys", { body: { mode: "test", name: "From the dashboard" } });
    expect(key.status).toBe(201);
    expect(key.headers.get("cache-control")).toBe("no-store");
    expect(key.body.key).toMatch(/^sk_test_/);
    // The new key works, and the list shows it masked only.
    expect((await t.call("GET", "/api/v1/tags", { key: key.body.key })).status).toBe(200);
    const listed = (await sessionCall(t, developer, "GET", "/api/v1/api-keys?limit=500")).body.items as Array<Record<string, unknown>>;
    expect(listed.find((k) => k.id === key.body.id)).toMatchObject({ masked: `sk_test_…${(key.body.key as string).slice(-4)}` });
    expect(JSON.stringify(listed)).not.toContain(key.body.key);
    const revoked = await sessionCall(t, developer, "DELETE", `/api/v1/api-keys/${key.body.id}`);
    expect(revoked.status).toBe(204);
    expect((await t.call("GET", "/api/v1/tags", { key: key.body.key })).status).toBe(401);

    const subscriber = await sessionCall(t, developer, "POST", "/api/v1/subscribers", { body: { email: "dev-made@example.com" } });
    expect([subscriber.status, subscriber.body.code]).toEqual([403, "role_forbidden"]);
    expect(subscriber.body.detail).toMatch(/admin/);
    // An API key is no member: the keys are the dashboard's (session only).
    expect((await t.call("POST", "/api/v1/api-keys", { body: { mode: "test" } })).body.code).toBe("missing_session");
  });

  it("keeps the last owner, lets only an owner touch owners, and ends a removed member's sessions at once", async () => {
    const adminCreds = await createMember(t, "admin");
    const admin = await signIn(t, adminCreds);
    // An admin may not demote, remove or make an owner.
    expect((await sessionCall(t, admin, "PATCH", `/api/v1/members/${owner.memberId}`, { body: { role: "viewer" } })).body.code).toBe("role_forbidden");
    expect((await sessionCall(t, admin, "DELETE", `/api/v1/members/${owner.memberId}`)).body.code).toBe("role_forbidden");
    expect((await sessionCall(t, admin, "POST", "/api/v1/invitations", { body: { email: `owner2-${store}@example.com`, role: "owner" } })).body.code).toBe("role_forbidden");
    // The owner is the last one: they cannot demote or remove themselves.
    const demote = await sessionCall(t, ownerSession, "PATCH", `/api/v1/members/${owner.memberId}`, { body: { role: "admin" } });
    expect([demote.status, demote.body.code]).toEqual([409, "last_owner"]);
    expect((await sessionCall(t, ownerSession, "DELETE", `/api/v1/members/${owner.memberId}`)).body.code).toBe("last_owner");

    // A removed member's cookie is refused at once, on the next request.
    const developer = await createMember(t, "developer");
    const devSession = await signIn(t, developer);
    expect((await sessionCall(t, devSession, "GET", "/api/v1/session")).status).toBe(200);
    expect((await sessionCall(t, admin, "DELETE", `/api/v1/members/${developer.memberId}`)).status).toBe(204);
    const after = await sessionCall(t, devSession, "GET", "/api/v1/session");
    expect([after.status, after.body.code]).toEqual([401, "invalid_session"]);
    expect((await publicCall(t, "POST", "/api/v1/session", { email: developer.email, password: developer.password })).status).toBe(401);

    // A role change applies to the member's open session at once.
    expect((await sessionCall(t, ownerSession, "PATCH", `/api/v1/members/${adminCreds.memberId}`, { body: { role: "viewer" } })).status).toBe(200);
    expect((await sessionCall(t, admin, "POST", "/api/v1/tags", { body: { name: "after-demotion" } })).body.code).toBe("role_forbidden");
    const members = (await sessionCall(t, admin, "GET", "/api/v1/members")).body.items as Array<{ id: string; role: string }>;
    expect(members.find((m) => m.id === adminCreds.memberId)?.role).toBe("viewer");
  });

  it("signs out, and signs out everywhere", async () => {
    const creds = await createMember(t, "viewer");
    const one = await signIn(t, creds);
    const two = await signIn(t, creds);
    const three = await signIn(t, creds);
    const out = await sessionCall(t, one, "DELETE", "/api/v1/session");
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/^emailsvc_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Strict$/);
    expect((await sessionCall(t, one, "GET", "/api/v1/session")).body.code).toBe("invalid_session");
    expect((await sessionCall(t, two, "GET", "/api/v1/session")).status).toBe(200);
    expect((await sessionCall(t, two, "DELETE", "/api/v1/sessions")).status).toBe(204);
    expect((await sessionCall(t, two, "GET", "/api/v1/session")).body.code).toBe("invalid_session");
    expect((await sessionCall(t, three, "GET", "/api/v1/session")).body.code).toBe("invalid_session");
    expect((await signIn(t, creds)).csrf).toBeTruthy();
  });

  it("mails an invitation through the platform (live mode), whose link makes the member once", async () => {
    const email = `invited-${store}@example.com`;
    const invited = await sessionCall(t, ownerSession, "POST", "/api/v1/invitations", { body: { email, role: "developer" } });
    expect(invited.status).toBe(201);
    expect(invited.body).toMatchObject({ email, role: "developer" });
    expect((await sessionCall(t, ownerSession, "GET", "/api/v1/invitations")).body.items.map((i: { id: string }) => i.id)).toContain(invited.body.id);
    const link = await mailedLink(email, "accept");
    expect(link).toMatch(/^http:\/\/localhost:\d+\/dashboard\/accept#token=[A-Za-z0-9_-]{43}$/);
    const token = new URL(link).hash.slice("#token=".length);

    const accepted = await publicCall(t, "POST", "/api/v1/invitations/accept", { token, name: "Invited Dev", password: "the invited one's password" });
    expect(accepted.status).toBe(201);
    expect(accepted.body.member).toMatchObject({ email, name: "Invited Dev", role: "developer" });
    const { name, value } = sessionCookieOf(accepted);
    const session = { cookie: `${name}=${value}`, csrf: accepted.body.csrf_token as string, name, value };
    expect((await sessionCall(t, session, "GET", "/api/v1/account")).body).toMatchObject({ id: t.accountId, member: { email, role: "developer" } });

    const again = await publicCall(t, "POST", "/api/v1/invitations/accept", { token, name: "Twice", password: "another long password" });
    expect([again.status, again.body.code]).toEqual([400, "invalid_token"]);
    const forged = await publicCall(t, "POST", "/api/v1/invitations/accept", { token: "B".repeat(43), name: "Forged", password: "another long password" });
    expect(forged.body).toMatchObject({ code: "invalid_token", detail: again.body.detail });
    // An address is one member: inviting it again is refused.
    expect((await sessionCall(t, ownerSession, "POST", "/api/v1/invitations", { body: { email, role: "viewer" } })).body.code).toBe("member_exists");
  });

  it("mails in the inviter's language, and a withdrawn invitation's link works no more", async () => {
    const email = `withdrawn-${store}@example.com`;
    const invited = await sessionCall(t, ownerSession, "POST", "/api/v1/invitations", { body: { email, role: "viewer" }, headers: { "accept-language": "de-CH, en;q=0.5" } });
    expect(invited.status).toBe(201);
    const link = await mailedLink(email, "accept");
    const sent = ((await sessionCall(t, ownerSession, "GET", "/api/v1/emails?limit=500")).body.items as Array<{ id: string; to: string }>).find((e) => e.to === email)!;
    expect((await sessionCall(t, ownerSession, "GET", `/api/v1/emails/${sent.id}/sandbox`)).body.subject).toMatch(/^Einladung zu /);

    expect((await sessionCall(t, ownerSession, "DELETE", `/api/v1/invitations/${invited.body.id}`)).status).toBe(204);
    expect((await sessionCall(t, ownerSession, "GET", "/api/v1/invitations")).body.items.map((i: { id: string }) => i.id)).not.toContain(invited.body.id);
    expect((await sessionCall(t, ownerSession, "DELETE", `/api/v1/invitations/${invited.body.id}`)).body.code).toBe("not_found");
    const token = new URL(link).hash.slice("#token=".length);
    expect((await publicCall(t, "POST", "/api/v1/invitations/accept", { token, name: "Too late", password: "a long enough password" })).body.code).toBe("invalid_token");
  });

  it("mails a password reset link to a member only, whose use sets the password and ends every session", async () => {
    const creds = await createMember(t, "viewer");
    const before = await signIn(t, creds);
    const asked = await publicCall(t, "POST", "/api/v1/password-resets", { email: creds.email });
    const nobody = await publicCall(t, "POST", "/api/v1/password-resets", { email: `not-a-member-${store}@example.com` });
    expect([asked.status, nobody.status]).toEqual([202, 202]);
    const link = await mailedLink(creds.email, "reset-password");
    const token = new URL(link).hash.slice("#token=".length);

    const short = await publicCall(t, "POST", "/api/v1/password-resets/complete", { token, password: "short" });
    expect(short.status).toBe(400);
    const done = await publicCall(t, "POST", "/api/v1/password-resets/complete", { token, password: "a brand new password" });
    expect(done.status).toBe(204);
    expect((await sessionCall(t, before, "GET", "/api/v1/session")).body.code).toBe("invalid_session");
    expect((await publicCall(t, "POST", "/api/v1/session", { email: creds.email, password: creds.password })).status).toBe(401);
    expect((await signIn(t, { email: creds.email, password: "a brand new password" })).csrf).toBeTruthy();
    const twice = await publicCall(t, "POST", "/api/v1/password-resets/complete", { token, password: "yet another password" });
    expect([twice.status, twice.body.code]).toEqual([400, "invalid_token"]);
    // No mail went to the address that is no member.
    const all = (await sessionCall(t, ownerSession, "GET", "/api/v1/emails?limit=500")).body.items as Array<{ to: string }>;
    expect(all.some((e) => e.to === `not-a-member-${store}@example.com`)).toBe(false);
  });

  it("keeps who did what, when and from where in the account's audit log, which only an admin reads", async () => {
    const creds = await createMember(t, "developer");
    const developer = await signIn(t, creds);
    await publicCall(t, "POST", "/api/v1/session", { email: creds.email, password: "a wrong password here" });
    const key = await sessionCall(t, developer, "POST", "/api/v1/api-keys", { body: { mode: "live", name: "audited" } });
    await sessionCall(t, developer, "DELETE", `/api/v1/api-keys/${key.body.id}`);
    expect((await sessionCall(t, developer, "POST", "/api/v1/subscribers", { body: { email: "nope@example.com" } })).status).toBe(403);
    await sessionCall(t, developer, "DELETE", "/api/v1/session");
    // An API key's calls are the integration's, not recorded.
    await t.call("POST", "/api/v1/tags", { body: { name: `by-key-${store}` } });

    expect((await sessionCall(t, await signIn(t, await createMember(t, "viewer")), "GET", "/api/v1/audit-log")).body.code).toBe("role_forbidden");
    // Written once each answer is known, without holding it up: the last one may still be on its way.
    const log = await eventually(
      () => sessionCall(t, ownerSession, "GET", "/api/v1/audit-log?limit=500"),
      (res) => (res.body.items as Array<{ action: string; actor: { id: string } }>).some((e) => e.action === "deleteSession" && e.actor.id === creds.memberId),
    );
    expect(log.status).toBe(200);
    const entries = (log.body.items as Array<{ actor: { type: string; id: string; email?: string }; action: string; status: number; path: string; mode: string | null; ip: string; at: string }>).filter(
      (e) => e.actor.id === creds.memberId || (e.actor.type === "operator" && e.action === "createAccountInvitation"),
    );
    const mine = entries.filter((e) => e.actor.id === creds.memberId).map((e) => [e.action, e.status]);
    // Newest first.
    expect(mine).toEqual([
      ["deleteSession", 204],
      ["createSubscriber", 403],
      ["revokeKey", 204],
      ["createKey", 201],
      ["createSession", 401],
      ["createSession", 201],
      ["acceptInvitation", 201],
    ]);
    const revoke = entries.find((e) => e.action === "revokeKey")!;
    expect(revoke).toMatchObject({ actor: { type: "member", id: creds.memberId, email: creds.email }, path: `/api/v1/api-keys/${key.body.id}`, mode: "live", ip: "127.0.0.1" });
    expect(entries.some((e) => e.actor.type === "operator")).toBe(true);
    expect(JSON.stringify(log.body)).not.toContain(`by-key-${store}`);
    expect((log.body.items as Array<{ action: string }>).some((e) => e.action === "createTag" && JSON.stringify(e).includes("api_key"))).toBe(false);
  });

  it("gives the overview: today's and this month's sends by status in the caller's time zone, and the rates", async () => {
    const template = await t.call("POST", "/api/v1/templates", {
      body: { name: "Overview", slug: `overview-${store}`, category: "transactional", subject: "Hi", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>" },
    });
    expect(template.status).toBe(201);
    const marketing = await t.call("POST", "/api/v1/templates", {
      body: { name: "News", slug: `overview-news-${store}`, category: "marketing", subject: "News", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>News</mj-text></mj-column></mj-section></mj-body></mjml>" },
    });
    expect(marketing.status).toBe(201);
    for (const to of ["one@example.com", "two@example.com"]) {
      expect((await t.call("POST", "/api/v1/emails/send", { body: { template_slug: `overview-${store}`, to } })).status).toBe(202);
    }
    // Marketing mail to a suppressed address: refused, stored as suppressed.
    expect((await t.call("POST", "/api/v1/suppressions", { body: { email: "blocked@example.com", reason: "manual" } })).status).toBe(201);
    expect((await t.call("POST", "/api/v1/emails/send", { body: { template_slug: `overview-news-${store}`, to: "blocked@example.com" } })).body.status).toBe("suppressed");
    const viewer = await signIn(t, await createMember(t, "viewer"));
    const overview = await eventually(
      async () => (await sessionCall(t, viewer, "GET", "/api/v1/overview?tz=Europe/Zurich", { mode: "test" })).body,
      (body) => body.today?.counts?.sent === 2 && body.today.total === 3,
    );
    expect(overview).toMatchObject({ tz: "Europe/Zurich", today: { total: 3, counts: { sent: 2, suppressed: 1, queued: 0, bounced: 0 } }, month: { total: 3 }, bounce_rate: 0, complaint_rate: 0, running_campaigns: [] });
    // Midnight in Zurich is 23:00 or 22:00 UTC the day before.
    expect(overview.today.since).toMatch(/T2[23]:00:00\.000Z$/);
    expect(Date.parse(overview.month.since)).toBeLessThanOrEqual(Date.parse(overview.today.since));
    // The live mode has its own numbers (the members' mail went there).
    const live = (await sessionCall(t, viewer, "GET", "/api/v1/overview", { mode: "live" })).body;
    expect(live.tz).toBe("UTC");
    expect(live.today.counts.suppressed).toBe(0);
    expect((await sessionCall(t, viewer, "GET", "/api/v1/overview?tz=Mars/Olympus")).body.code).toBe("validation_failed");
  });
});
