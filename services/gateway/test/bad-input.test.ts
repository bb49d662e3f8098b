import { startHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ bodyLimitBytes: 4096 });
});
afterAll(() => h.close());
beforeEach(() => {
  h.fake.calls.length = 0;
});

/** Every bad request is refused before it reaches the service: it changes nothing. */
function expectNoServiceCall() {
  expect(h.fake.calls).toHaveLength(0);
}

describe("bad input", () => {
  it("malformed JSON is 400 invalid_json", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { rawBody: '{"email": ', headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_json");
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expectNoServiceCall();
  });

  it("an empty body is 400 invalid_json", async () => {
    const res = await h.request("POST", "/api/v1/tags", { rawBody: "", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_json");
  });

  it("invalid UTF-8 is 400 invalid_json", async () => {
    const res = await h.request("POST", "/api/v1/tags", {
      rawBody: Buffer.from([0x7b, 0x22, 0x6e, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_json");
  });

  it.each([
    ["missing", {}],
    ["text/plain", { "content-type": "text/plain" }],
    ["form", { "content-type": "application/x-www-form-urlencoded" }],
    ["latin-1 JSON", { "content-type": "application/json; charset=latin1" }],
  ])("a %s content type is 415", async (_name, headers) => {
    const res = await h.request("POST", "/api/v1/subscribers", { rawBody: '{"email":"a@example.com"}', headers });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe("unsupported_media_type");
    expectNoServiceCall();
  });

  it("accepts application/json with a UTF-8 charset", async () => {
    const res = await h.request("POST", "/api/v1/tags", {
      rawBody: '{"name":"charset"}',
      headers: { "content-type": "Application/JSON; charset=UTF-8" },
    });
    expect(res.status).toBe(201);
  });

  it("an unknown field is 400 naming the field", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "a@example.com", role: "admin" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("validation_failed");
    expect(res.body.errors).toEqual([{ field: "role", message: "is not a known field" }]);
    expectNoServiceCall();
  });

  it.each(["id", "created_at", "updated_at"])("read-only field %s is 400 'is read-only'", async (field) => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "a@example.com", [field]: "x" } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field, message: "is read-only" }]);
  });

  it("read-only fields are refused on PATCH too, and tags are not a PATCH field", async () => {
    const res = await h.request("PATCH", "/api/v1/subscribers/sub_x", { body: { id: "sub_y", tags: ["a"] } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { field: "id", message: "is read-only" },
        { field: "tags", message: "is not a known field" },
      ]),
    );
    expectNoServiceCall();
  });

  it("wrong types are 400 naming each field", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: 42, tags: "news", metadata: [] } });
    expect(res.status).toBe(400);
    const fields = res.body.errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(["email", "metadata", "tags"]);
  });

  it("a wrong type inside a list names the element", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "a@example.com", tags: ["ok", 7] } });
    expect(res.body.errors).toEqual([{ field: "tags[1]", message: "must be string" }]);
  });

  it("a missing email is 400", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { tags: ["a"] } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "email", message: "is required" }]);
  });

  it("an invalid email is 400 from the service, field errors passed through", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "not-an-email" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "validation_failed", errors: [{ field: "email", message: "is not a valid email address" }] });
  });

  it("a body that is not an object is 400", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: ["a@example.com"] });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "body", message: "must be object" }]);
  });

  it("an empty PATCH is 400", async () => {
    const res = await h.request("PATCH", "/api/v1/tags/tag_x", { body: {} });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "body", message: "must have at least one field" }]);
  });

  it("an unknown status is 400 listing the allowed values", async () => {
    const res = await h.request("PATCH", "/api/v1/subscribers/sub_x", { body: { status: "deleted" } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "status", message: "must be one of: active, unsubscribed, bounced, complained" }]);
  });

  it.each(["0", "501", "-1", "abc", "1.5", ""])("limit=%s is 400", async (limit) => {
    const res = await h.request("GET", `/api/v1/subscribers?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe("limit");
    expectNoServiceCall();
  });

  it("a repeated limit is 400", async () => {
    const res = await h.request("GET", "/api/v1/tags?limit=1&limit=2");
    expect(res.status).toBe(400);
  });

  it.each(["1", "500"])("limit=%s is accepted", async (limit) => {
    expect((await h.request("GET", `/api/v1/subscribers?limit=${limit}`)).status).toBe(200);
  });

  it("a status filter outside the enum is 400", async () => {
    const res = await h.request("GET", "/api/v1/subscribers?status=ACTIVE");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe("status");
  });

  it("an oversized body is 413, announced or streamed", async () => {
    const big = { email: "a@example.com", metadata: { blob: "x".repeat(5000) } };
    const res = await h.request("POST", "/api/v1/subscribers", { body: big });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("payload_too_large");
    expectNoServiceCall();
  });

  it("an oversized chunked body is 413", async () => {
    const chunks = [Buffer.from('{"email":"a@example.com","metadata":{"blob":"'), Buffer.alloc(6000, 0x78), Buffer.from('"}}')];
    const stream = new ReadableStream({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
    const res = await fetch(`${h.url}/api/v1/subscribers`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": h.key },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expectNoServiceCall();
  });

  it("metadata too large for the service is 413 from the service", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { body: { email: "a@example.com", metadata: { a: "x".repeat(450), b: "x".repeat(450), c: "x".repeat(450) } } });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("metadata_too_large");
  });

  it('keys named "__proto__" are refused', async () => {
    const res = await h.request("POST", "/api/v1/subscribers", {
      rawBody: '{"email":"a@example.com","metadata":{"__proto__":{"admin":true}}}',
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_json");
    expectNoServiceCall();
  });

  it("a duplicate email is 409 email_taken with existing_id", async () => {
    const first = await h.request("POST", "/api/v1/subscribers", { body: { email: "dup@example.com" } });
    const second = await h.request("POST", "/api/v1/subscribers", { body: { email: "DUP@example.com" } });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: "email_taken", existing_id: first.body.id, title: "Email address already in use" });
  });

  it("the body is not read before authentication", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", { key: null, rawBody: "not json", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(401);
  });
});

describe("query parameters and methods (defect 6)", () => {
  it.each(["1e2", "0x10", "+5", " 5", "5.0", "0b11", "Infinity", "1_000"])("limit=%s is 400: integers are decimal digits", async (limit) => {
    const res = await h.request("GET", `/api/v1/tags?limit=${encodeURIComponent(limit)}`);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "limit", message: "must be an integer in decimal digits" }]);
    expectNoServiceCall();
  });

  it("limit=050 is 50", async () => {
    expect((await h.request("GET", "/api/v1/tags?limit=050")).status).toBe(200);
  });

  it("an unknown query parameter is 400 naming it, on every operation", async () => {
    const list = await h.request("GET", "/api/v1/subscribers?limt=5&status=active");
    expect(list.status).toBe(400);
    expect(list.body.errors).toEqual([{ field: "limt", message: "is not a known query parameter" }]);
    expect(list.body.detail).toMatch(/takes limit, status, email, tag, cursor/);
    const get = await h.request("GET", "/api/v1/tags/tag_x?expand=1");
    expect(get.body.errors).toEqual([{ field: "expand", message: "is not a known query parameter" }]);
    const post = await h.request("POST", "/api/v1/tags?dry_run=true", { body: { name: "q" } });
    expect(post.status).toBe(400);
    const probe = await h.request("GET", "/healthz?verbose=1", { key: null });
    expect(probe.status).toBe(400);
    expectNoServiceCall();
  });

  it("does not repeat a parameter name that could carry personal data", async () => {
    const res = await h.request("GET", `/api/v1/tags?${encodeURIComponent("ada@example.com")}=1`);
    expect(res.status).toBe(400);
    // Everything but the request id, a random UUID that may hold the letters "ada" by chance.
    const { request_id: _requestId, ...answer } = res.body as Record<string, unknown>;
    expect(JSON.stringify(answer)).not.toContain("ada");
    expect(res.body.errors).toEqual([{ field: "query", message: "has a query parameter that is not known" }]);
  });

  it.each(["PUT", "PROPFIND", "LOCK", "PURGE"])("an unknown method %s on a known path is 405 with Allow, as problem+json", async (method) => {
    const res = await h.request(method, "/api/v1/tags");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST, HEAD, GET");
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe("method_not_allowed");
  });

  it("OPTIONS answers 204 with Allow; an unknown path stays 404", async () => {
    const options = await h.request("OPTIONS", "/api/v1/tags/tag_x");
    expect(options.status).toBe(204);
    expect(options.headers.get("allow")!.split(", ").sort()).toEqual(["DELETE", "GET", "HEAD", "PATCH"]);
    expect((await h.request("PROPFIND", "/api/v1/nope")).status).toBe(404);
  });
});
