import { AppError } from "@emailsvc/errors";
import { HEADER_ACCOUNT, HEADER_ACTOR, HEADER_MODE, HEADER_REQUEST_ID } from "@emailsvc/tenancy";
import { startHarness, type Harness } from "./support/harness";

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(() => h.close());

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe("subscribers", () => {
  it("creates a subscriber and answers 201 with the snake_case resource", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", {
      body: { email: "ada@example.com", tags: ["news", "beta"], metadata: { plan: "pro", seats: 3 } },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^sub_/),
      email: "ada@example.com",
      status: "active",
      locale: null,
      metadata: { plan: "pro", seats: 3 },
      tags: ["beta", "news"],
      created_at: expect.stringMatching(RFC3339_UTC),
      updated_at: expect.stringMatching(RFC3339_UTC),
    });
  });

  it("sends the tenant, the actor and the request id in headers, with a deadline and a cancel signal", async () => {
    await h.request("POST", "/api/v1/subscribers", { body: { email: "a@example.com" }, headers: { "x-request-id": "req-42" } });
    const call = h.fake.lastCall!;
    expect(call.method).toBe("createSubscriber");
    expect(call.headers.get(HEADER_ACCOUNT)).toBe(h.accountId);
    expect(call.headers.get(HEADER_MODE)).toBe("test");
    expect(call.headers.get(HEADER_ACTOR)).toBe(`api_key:${h.keyId}`);
    expect(call.headers.get(HEADER_REQUEST_ID)).toBe("req-42");
    expect(call.hasDeadline).toBe(true);
    expect(call.signal).toBeDefined();
  });

  it("accepts a status on create", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "u@example.com", status: "unsubscribed" } });
    expect(res.body.status).toBe("unsubscribed");
  });

  it("gets a subscriber by id and by URL-encoded email", async () => {
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "Bob+x/y@Example.com" } })).body;
    expect((await h.request("GET", `/api/v1/subscribers/${created.id}`)).body).toEqual(created);
    const byEmail = await h.request("GET", `/api/v1/subscribers/by-email/${encodeURIComponent("bob+x/y@example.com")}`);
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.id).toBe(created.id);
    expect(h.fake.lastCall!.method).toBe("getSubscriberByEmail");
  });

  it("looks up addresses that look like other routes' words by email", async () => {
    await h.request("POST", "/api/v1/subscribers", { body: { email: "events@example.com" } });
    const res = await h.request("GET", "/api/v1/subscribers/by-email/events@example.com");
    expect(res.status).toBe(200);
    expect(res.body.email).toBe("events@example.com");
  });

  it("updates email, status and metadata (merged, null removes)", async () => {
    const created = (
      await h.request("POST", "/api/v1/subscribers", { body: { email: "c@example.com", metadata: { a: 1, b: 2 } } })
    ).body;
    const res = await h.request("PATCH", `/api/v1/subscribers/${created.id}`, {
      body: { email: "c2@example.com", status: "bounced", metadata: { b: null, c: "x" } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email: "c2@example.com", status: "bounced", metadata: { a: 1, c: "x" } });
  });

  it("deletes with 204 and no body, then 404", async () => {
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "d@example.com" } })).body;
    const res = await h.request("DELETE", `/api/v1/subscribers/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect((await h.request("GET", `/api/v1/subscribers/${created.id}`)).status).toBe(404);
  });

  it("adds tags without replacing and removes one tag leaving the others", async () => {
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "t@example.com", tags: ["a"] } })).body;
    const added = await h.request("POST", `/api/v1/subscribers/${created.id}/tags`, { body: { tags: ["b", "c"] } });
    expect(added.status).toBe(200);
    expect(added.body.tags).toEqual(["a", "b", "c"]);
    const removed = await h.request("DELETE", `/api/v1/subscribers/${created.id}/tags/b`);
    expect(removed.status).toBe(200);
    expect(removed.body.tags).toEqual(["a", "c"]);
  });

  it("passes a URL-encoded tag name decoded", async () => {
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "t2@example.com", tags: ["a b&c"] } })).body;
    const removed = await h.request("DELETE", `/api/v1/subscribers/${created.id}/tags/${encodeURIComponent("a b&c")}`);
    expect(removed.status).toBe(200);
    expect(h.fake.lastCall!.method).toBe("removeTag");
    expect(removed.body.tags).toEqual([]);
  });

  it("reads the audit trail with actor and UTC timestamps", async () => {
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "e@example.com" }, headers: { "user-agent": "test-agent/1.0" } })).body;
    await h.request("POST", `/api/v1/subscribers/${created.id}/tags`, { body: { tags: ["x"] } });
    const res = await h.request("GET", `/api/v1/subscribers/${created.id}/events?limit=1`);
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([
      {
        id: expect.any(String),
        type: "subscriber.created",
        occurred_at: expect.stringMatching(RFC3339_UTC),
        actor: `api_key:${h.keyId}`,
        source: "api",
        ip: "127.0.0.1",
        user_agent: "test-agent/1.0",
        data: {},
      },
    ]);
    expect(res.body.next_cursor).toEqual(expect.any(String));
    const next = await h.request("GET", `/api/v1/subscribers/${created.id}/events?limit=1&cursor=${res.body.next_cursor}`);
    expect(next.body.items[0].type).toBe("subscriber.tag_added");
    expect(next.body.next_cursor).toBeNull();
  });

  it("tells the service how every change came: source api, the client's address and its user agent (cut to 512 characters)", async () => {
    const ua = "Mozilla/5.0 " + "x".repeat(600);
    const headers = { "user-agent": ua };
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "how@example.com" }, headers })).body;
    const expected = { source: "api", ip: "127.0.0.1", userAgent: ua.slice(0, 512) };
    const auditOf = () => (h.fake.lastCall!.request as { audit?: unknown }).audit;
    expect(auditOf()).toMatchObject(expected);
    await h.request("PATCH", `/api/v1/subscribers/${created.id}`, { body: { status: "unsubscribed" }, headers });
    expect(auditOf()).toMatchObject(expected);
    await h.request("POST", `/api/v1/subscribers/${created.id}/tags`, { body: { tags: ["x"] }, headers });
    expect(auditOf()).toMatchObject(expected);
    await h.request("DELETE", `/api/v1/subscribers/${created.id}/tags/x`, { headers });
    expect(auditOf()).toMatchObject(expected);
    await h.request("DELETE", `/api/v1/subscribers/${created.id}`, { headers });
    expect(h.fake.lastCall!.method).toBe("deleteSubscriber");
    expect(auditOf()).toMatchObject(expected);
    // X-Forwarded-For is not believed without TRUSTED_PROXY_HOPS.
    await h.request("POST", "/api/v1/subscribers", { body: { email: "fwd@example.com" }, headers: { "x-forwarded-for": "203.0.113.9" } });
    expect(auditOf()).toMatchObject({ source: "api", ip: "127.0.0.1" });
  });

  it("takes a locale on create and update (null or an empty string removes it) and refuses others", async () => {
    const created = await h.request("POST", "/api/v1/subscribers", { body: { email: "lang@example.com", locale: "de" } });
    expect(created.status).toBe(201);
    expect(created.body.locale).toBe("de");
    const changed = await h.request("PATCH", `/api/v1/subscribers/${created.body.id}`, { body: { locale: "it" } });
    expect(changed.body.locale).toBe("it");
    expect((await h.request("PATCH", `/api/v1/subscribers/${created.body.id}`, { body: { locale: null } })).body.locale).toBeNull();
    expect((h.fake.lastCall!.request as { locale?: string }).locale).toBe("");
    await h.request("PATCH", `/api/v1/subscribers/${created.body.id}`, { body: { status: "active" } });
    expect((h.fake.lastCall!.request as { locale?: string }).locale).toBeUndefined();
    for (const locale of ["es", "DE", 1]) {
      const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "lang2@example.com", locale } });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(["locale"]);
    }
  });

  it("passes resubscribe and its reason on create; the document requires the reason with the flag and refuses it without", async () => {
    const ok = await h.request("POST", "/api/v1/subscribers", { body: { email: "back@example.com", resubscribe: true, resubscribe_reason: "opted in again at the fair" } });
    expect(ok.status).toBe(201);
    expect(h.fake.lastCall!.request).toMatchObject({ resubscribe: true, resubscribeReason: "opted in again at the fair" });
    const calls = h.fake.calls.length;
    for (const body of [
      { resubscribe: true },
      { resubscribe: true, resubscribe_reason: "" },
      { resubscribe: true, resubscribe_reason: "   " },
      { resubscribe: true, resubscribe_reason: "x".repeat(501) },
      { resubscribe: true, resubscribe_reason: "line\nbreak" },
      { resubscribe: false, resubscribe_reason: "why" },
      { resubscribe_reason: "why" },
    ]) {
      const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "back2@example.com", ...body } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("validation_failed");
    }
    expect(h.fake.calls.length).toBe(calls);
  });

  it("answers a suppressed address with 409 problem+json subscriber_suppressed", async () => {
    h.fake.failNext = new AppError("conflict", "subscriber_suppressed", "this address was erased at its owner's request", {
      fieldViolations: [{ field: "email", description: "is suppressed after an erasure" }],
    });
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "erased@example.com" } });
    expect(res.status).toBe(409);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ code: "subscriber_suppressed", title: "Email address suppressed after an erasure", errors: [{ field: "email" }] });
  });

  describe("list", () => {
    beforeEach(async () => {
      for (let i = 0; i < 5; i++) {
        await h.request("POST", "/api/v1/subscribers", { body: { email: `l${i}@example.com`, status: i % 2 ? "unsubscribed" : "active" } });
      }
    });

    it("pages with limit and next_cursor until next_cursor is null", async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: Awaited<ReturnType<Harness["request"]>> = await h.request(
          "GET",
          `/api/v1/subscribers?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        );
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((s: { email: string }) => s.email));
        cursor = res.body.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(["l0@example.com", "l1@example.com", "l2@example.com", "l3@example.com", "l4@example.com"]);
    });

    it("defaults the limit to 50 and maps the status filter", async () => {
      const res = await h.request("GET", "/api/v1/subscribers?status=active");
      expect(res.body.items).toHaveLength(3);
      expect(res.body.next_cursor).toBeNull();
      const call = h.fake.lastCall!;
      expect(call.method).toBe("listSubscribers");
    });

    it("filters by address prefix (ignoring case) and by tag name; a bad filter is a 400 problem", async () => {
      const byPrefix = await h.request("GET", "/api/v1/subscribers?email=L3");
      expect(byPrefix.status).toBe(200);
      expect(byPrefix.body.items.map((s: { email: string }) => s.email)).toEqual(["l3@example.com"]);
      await h.request("POST", "/api/v1/subscribers", { body: { email: "tagged@example.com", tags: ["Gold"] } });
      const byTag = await h.request("GET", "/api/v1/subscribers?tag=gold&email=t");
      expect(byTag.body.items.map((s: { email: string }) => s.email)).toEqual(["tagged@example.com"]);
      expect((await h.request("GET", "/api/v1/subscribers?tag=unknown")).body).toEqual({ items: [], next_cursor: null });
      const bad = await h.request("GET", "/api/v1/subscribers?email=a%01b");
      expect(bad.status).toBe(400);
      expect(bad.body.errors).toEqual([expect.objectContaining({ field: "email" })]);
      expect((await h.request("GET", `/api/v1/subscribers?email=${"a".repeat(255)}`)).status).toBe(400);
      expect((await h.request("GET", "/api/v1/subscribers?tag=a%2Fb")).status).toBe(400);
      expect((await h.request("DELETE", `/api/v1/subscribers/${byTag.body.items[0].id}`)).status).toBe(204);
    });

    it("refuses a tampered cursor with 400 (the service's verdict)", async () => {
      const first = await h.request("GET", "/api/v1/subscribers?limit=2");
      const tampered = Buffer.from(Buffer.from(first.body.next_cursor, "base64url").toString().replace("o2", "o3")).toString("base64url");
      const res = await h.request("GET", `/api/v1/subscribers?limit=2&cursor=${tampered}`);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ field: "cursor", message: "is not a valid cursor" }]);
    });
  });
});

describe("tags", () => {
  it("creates (is_public defaults to false), lists, gets, updates and deletes a tag", async () => {
    const created = await h.request("POST", "/api/v1/tags", { body: { name: "news", description: "Monthly news" } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^tag_/),
      name: "news",
      description: "Monthly news",
      is_public: false,
      translations: {},
      subscriber_count: 0,
      created_at: expect.stringMatching(RFC3339_UTC),
      updated_at: expect.stringMatching(RFC3339_UTC),
    });
    const id = created.body.id;
    expect((await h.request("GET", `/api/v1/tags/${id}`)).body).toEqual(created.body);
    const list = await h.request("GET", "/api/v1/tags?limit=10");
    expect(list.body).toEqual({ items: [created.body], next_cursor: null });
    const updated = await h.request("PATCH", `/api/v1/tags/${id}`, { body: { is_public: true } });
    expect(updated.body).toMatchObject({ name: "news", description: "Monthly news", is_public: true });
    expect((await h.request("DELETE", `/api/v1/tags/${id}`)).status).toBe(204);
    expect((await h.request("GET", `/api/v1/tags/${id}`)).status).toBe(404);
  });

  it("creates a tag with only a name", async () => {
    const created = await h.request("POST", "/api/v1/tags", { body: { name: "only" } });
    expect(created.body).toMatchObject({ name: "only", description: "", is_public: false });
  });
});

describe("tenancy", () => {
  it("keeps live and test data apart: ids of another tenant are 404", async () => {
    const created = (await h.request("POST", "/api/v1/subscribers", { body: { email: "x@example.com" } })).body;
    const live = await h.running.gateway.accounts.createApiKey(h.accountId, { mode: "live" });
    const res = await h.request("GET", `/api/v1/subscribers/${created.id}`, { key: live.key });
    expect(res.status).toBe(404);
    expect(h.fake.lastCall!.headers.get(HEADER_MODE)).toBe("live");

    const other = await h.running.gateway.accounts.createAccount({ name: "Other", plan: "starter" });
    const otherKey = await h.running.gateway.accounts.createApiKey(other.id, { mode: "test" });
    expect((await h.request("GET", `/api/v1/subscribers/${created.id}`, { key: otherKey.key })).status).toBe(404);
  });
});
