import { AppError } from "@emailsvc/errors";
import { HEADER_ACCOUNT, HEADER_ACTOR, HEADER_MODE, HEADER_REQUEST_ID } from "@emailsvc/tenancy";
import { templates as proto } from "@emailsvc/proto";
import { MJML_MAX_LENGTH, TEMPLATE_BODY_LIMIT_BYTES } from "../src/openapi";
import { startHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());
beforeEach(() => {
  h.templates.calls.length = 0;
});

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MJML = `<mjml>
  <mj-body>
    <mj-section><mj-column><mj-text>Hello {{first_name}}, your order {{order.id}} is on its way.</mj-text></mj-column></mj-section>
  </mj-body>
</mjml>`;

let counter = 0;
async function createTemplate(overrides: Record<string, unknown> = {}) {
  counter += 1;
  const res = await h.request("POST", "/api/v1/templates", {
    body: { name: `Order shipped ${counter}`, subject: "Your order {{order.id}}", mjml_content: MJML, category: "transactional", ...overrides },
  });
  expect(res.status).toBe(201);
  return res.body;
}

describe("templates", () => {
  it("creates a template and answers 201 with the snake_case resource", async () => {
    const res = await h.request("POST", "/api/v1/templates", {
      body: { name: "Welcome", subject: "Welcome, {{first_name}}!", mjml_content: MJML, category: "marketing", slug: "welcome" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^tpl_/),
      slug: "welcome",
      name: "Welcome",
      subject: "Welcome, {{first_name}}!",
      mjml_content: MJML,
      category: "marketing",
      ignore_suppressions: [],
      version: 1,
      variables: ["first_name", "order.id"],
      from_email: null,
      from_name: null,
      reply_to: null,
      created_at: expect.stringMatching(RFC3339_UTC),
      updated_at: expect.stringMatching(RFC3339_UTC),
    });
  });

  it("maps the body to CreateTemplate, with the tenant, actor and request id in headers", async () => {
    await h.request("POST", "/api/v1/templates", {
      body: { name: "Receipt", subject: "Receipt", mjml_content: MJML, category: "transactional" },
      headers: { "x-request-id": "tpl-req-1" },
    });
    const call = h.templates.lastCall!;
    expect(call.method).toBe("createTemplate");
    expect(call.headers.get(HEADER_ACCOUNT)).toBe(h.accountId);
    expect(call.headers.get(HEADER_MODE)).toBe("test");
    expect(call.headers.get(HEADER_ACTOR)).toBe(`api_key:${h.keyId}`);
    expect(call.headers.get(HEADER_REQUEST_ID)).toBe("tpl-req-1");
    expect(call.hasDeadline).toBe(true);
  });

  it("derives the slug from the name when none is given (the service's rule)", async () => {
    const created = await createTemplate({ name: "Password Reset" });
    expect(created.slug).toBe("password-reset");
  });

  it("gets a template by id", async () => {
    const created = await createTemplate();
    const res = await h.request("GET", `/api/v1/templates/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
  });

  it("updates: a new subject or MJML makes a new version, a new name or category does not", async () => {
    const created = await createTemplate();
    const renamed = await h.request("PATCH", `/api/v1/templates/${created.id}`, { body: { name: "Renamed", category: "marketing" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: "Renamed", category: "marketing", version: 1, subject: created.subject });

    const resubjected = await h.request("PATCH", `/api/v1/templates/${created.id}`, { body: { subject: "Shipped: {{order.id}} for {{first_name}}" } });
    expect(resubjected.body).toMatchObject({ version: 2, subject: "Shipped: {{order.id}} for {{first_name}}", category: "marketing" });

    const newMjml = MJML.replace("Hello {{first_name}}", "Hi {{nickname}}");
    const remarked = await h.request("PATCH", `/api/v1/templates/${created.id}`, { body: { mjml_content: newMjml } });
    expect(remarked.body).toMatchObject({ version: 3, mjml_content: newMjml, variables: ["first_name", "nickname", "order.id"] });
  });

  it("leaves fields out of UpdateTemplate when the PATCH leaves them out (category UNSPECIFIED)", async () => {
    const created = await createTemplate();
    await h.request("PATCH", `/api/v1/templates/${created.id}`, { body: { name: "Only the name" } });
    expect(h.templates.lastCall!.method).toBe("updateTemplate");
    const stored = await h.request("GET", `/api/v1/templates/${created.id}`);
    expect(stored.body).toMatchObject({ name: "Only the name", category: "transactional", subject: created.subject, mjml_content: MJML });
    expect(proto.TemplateCategory.UNSPECIFIED).toBe(0);
  });

  it("deletes with 204 and no body, then 404", async () => {
    const created = await createTemplate();
    const res = await h.request("DELETE", `/api/v1/templates/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    const gone = await h.request("GET", `/api/v1/templates/${created.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ code: "not_found", detail: "template not found" });
  });

  it("lists templates without their MJML, paging with limit and next_cursor", async () => {
    const other = await startHarness();
    try {
      for (let i = 0; i < 3; i++) {
        await other.request("POST", "/api/v1/templates", {
          body: { name: `T${i}`, subject: "S", mjml_content: MJML, category: "transactional" },
        });
      }
      const first = await other.request("GET", "/api/v1/templates?limit=2");
      expect(first.status).toBe(200);
      expect(first.body.items).toHaveLength(2);
      expect(first.body.items[0]).not.toHaveProperty("mjml_content");
      expect(first.body.items[0]).toMatchObject({ slug: "t0", name: "T0", version: 1, category: "transactional" });
      expect(first.body.next_cursor).toEqual(expect.any(String));
      const second = await other.request("GET", `/api/v1/templates?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body.items.map((t: { name: string }) => t.name)).toEqual(["T2"]);
      expect(second.body.next_cursor).toBeNull();
      expect(other.templates.lastCall!.method).toBe("listTemplates");
    } finally {
      await other.close();
    }
  });

  it("keeps tenants apart: another key's template is 404", async () => {
    const created = await createTemplate();
    const live = await h.running.gateway.accounts.createApiKey(h.accountId, { mode: "live" });
    expect((await h.request("GET", `/api/v1/templates/${created.id}`, { key: live.key })).status).toBe(404);
  });
});

describe("preview", () => {
  it("renders html, subject and text and lists missing variables", async () => {
    const created = await createTemplate();
    const res = await h.request("POST", `/api/v1/templates/${created.id}/preview`, { body: { variables: { first_name: "<Ada>" } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      html: expect.stringContaining("Hello &#60;Ada&#62;, your order  is on its way."),
      subject: "Your order ",
      text: expect.stringContaining("your order  is on its way."),
      missing_variables: ["order.id"],
    });
  });

  it("passes nested variables as a Struct", async () => {
    const created = await createTemplate();
    const res = await h.request("POST", `/api/v1/templates/${created.id}/preview`, {
      body: { variables: { first_name: "Ada", order: { id: "A-1" } } },
    });
    expect(res.body.subject).toBe("Your order A-1");
    expect(res.body.missing_variables).toEqual([]);
  });

  it("takes an empty body object: no variables", async () => {
    const created = await createTemplate();
    const res = await h.request("POST", `/api/v1/templates/${created.id}/preview`, { body: {} });
    expect(res.status).toBe(200);
    expect(res.body.missing_variables).toEqual(["first_name", "order.id"]);
  });

  it("is 404 for an unknown template", async () => {
    const res = await h.request("POST", "/api/v1/templates/tpl_nope/preview", { body: { variables: {} } });
    expect(res.status).toBe(404);
  });
});

describe("bad template input", () => {
  function expectNoCall() {
    expect(h.templates.calls).toHaveLength(0);
  }

  it.each([
    ["name", { subject: "s", mjml_content: MJML, category: "marketing" }],
    ["subject", { name: "n", mjml_content: MJML, category: "marketing" }],
    ["mjml_content", { name: "n", subject: "s", category: "marketing" }],
    ["category", { name: "n", subject: "s", mjml_content: MJML }],
  ])("a missing %s is 400", async (field, body) => {
    const res = await h.request("POST", "/api/v1/templates", { body });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field, message: "is required" }]);
    expectNoCall();
  });

  it("an unknown category is 400 listing the allowed values", async () => {
    const res = await h.request("POST", "/api/v1/templates", { body: { name: "n", subject: "s", mjml_content: MJML, category: "newsletter" } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "category", message: "must be one of: transactional, marketing" }]);
    expectNoCall();
  });

  it.each(["id", "version", "variables", "created_at"])("read-only %s is refused on create", async (field) => {
    const res = await h.request("POST", "/api/v1/templates", {
      body: { name: "n", subject: "s", mjml_content: MJML, category: "marketing", [field]: "x" },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field, message: "is read-only" }]);
  });

  it("the slug cannot be changed, and an empty PATCH is 400", async () => {
    const slug = await h.request("PATCH", "/api/v1/templates/tpl_x", { body: { slug: "other" } });
    expect(slug.status).toBe(400);
    expect(slug.body.errors).toEqual([{ field: "slug", message: "is not a known field" }]);
    const empty = await h.request("PATCH", "/api/v1/templates/tpl_x", { body: {} });
    expect(empty.body.errors).toEqual([{ field: "body", message: "must have at least one field" }]);
    expectNoCall();
  });

  it("wrong types are 400 naming each field", async () => {
    const res = await h.request("POST", "/api/v1/templates", { body: { name: 1, subject: [], mjml_content: {}, category: "marketing" } });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["mjml_content", "name", "subject"]);
  });

  it("preview variables that are not an object are 400 naming variables", async () => {
    for (const variables of [["a"], "x", 3, null]) {
      const res = await h.request("POST", "/api/v1/templates/tpl_x/preview", { body: { variables } });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ field: "variables", message: "must be object" }]);
    }
    expectNoCall();
  });

  it("MJML that does not compile is 400 with the service's errors naming the line", async () => {
    const bad = "<mjml>\n  <mj-body>\n    <mj-bogus/>\n  </mj-body>\n</mjml>";
    const res = await h.request("POST", "/api/v1/templates", { body: { name: "bad", subject: "s", mjml_content: bad, category: "marketing" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "validation_failed",
      errors: [{ field: "mjml_content", message: "line 3: element <mj-bogus> is not a known MJML element" }],
    });
  });

  it("a taken slug is 409 with existing_id", async () => {
    const created = await createTemplate({ slug: "taken" });
    const res = await h.request("POST", "/api/v1/templates", {
      body: { name: "n", subject: "s", mjml_content: MJML, category: "marketing", slug: "taken" },
    });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "slug_taken", existing_id: created.id });
  });

  it("a concurrent update is 409 from the service", async () => {
    h.templates.failNext = new AppError("conflict", "concurrent_update", "the template is being changed concurrently; retry");
    const res = await h.request("PATCH", "/api/v1/templates/tpl_x", { body: { name: "n" } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "concurrent_update", detail: "the template is being changed concurrently; retry" });
  });

  it("MJML too large for the service is 413 from the service", async () => {
    h.templates.failNext = new AppError("too_large", "mjml_too_large", "mjml_content is too large", {
      fieldViolations: [{ field: "mjml_content", description: "at most 512 KiB" }],
    });
    const res = await h.request("POST", "/api/v1/templates", { body: { name: "n", subject: "s", mjml_content: MJML, category: "marketing" } });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: "mjml_too_large", errors: [{ field: "mjml_content", message: "at most 512 KiB" }] });
  });

  it(`mjml_content longer than ${MJML_MAX_LENGTH} characters is 400 naming it`, async () => {
    const long = `<mjml>${"x".repeat(MJML_MAX_LENGTH)}</mjml>`;
    const res = await h.request("POST", "/api/v1/templates", { body: { name: "n", subject: "s", mjml_content: long, category: "marketing" } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "mjml_content", message: `must NOT have more than ${MJML_MAX_LENGTH} characters` }]);
    expectNoCall();
  });
});

describe("body limits", () => {
  // Markup with quotes and newlines: each escapes to two bytes in JSON.
  const bigMjml = (chars: number) => `<mjml>${'<mj-text align="left">x</mj-text>\n'.repeat(chars / 16).slice(0, chars - 13)}</mjml>`;

  it("template create takes a body above the 256 KiB default, up to the template limit", async () => {
    const mjml = bigMjml(MJML_MAX_LENGTH);
    const res = await h.request("POST", "/api/v1/templates", { body: { name: "Big", subject: "s", mjml_content: mjml, category: "marketing" } });
    expect(Buffer.byteLength(JSON.stringify({ name: "Big", subject: "s", mjml_content: mjml }))).toBeGreaterThan(512 * 1024);
    expect(res.status).toBe(201);
    expect(res.body.mjml_content.length).toBe(MJML_MAX_LENGTH);
  });

  it("template update takes it too", async () => {
    const created = await createTemplate();
    const res = await h.request("PATCH", `/api/v1/templates/${created.id}`, { body: { mjml_content: bigMjml(400 * 1024) } });
    expect(res.status).toBe(200);
    expect(res.body.version).toBe(2);
  });

  it("a body above the template limit is 413", async () => {
    const res = await h.request("POST", "/api/v1/templates", {
      body: { name: "Huge", subject: "s", mjml_content: "x".repeat(TEMPLATE_BODY_LIMIT_BYTES), category: "marketing" },
    });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("payload_too_large");
    expectNoCall();
  });

  it("other routes keep the 256 KiB default: a 300 KiB preview is 413", async () => {
    const res = await h.request("POST", "/api/v1/templates/tpl_x/preview", { body: { variables: { blob: "x".repeat(300 * 1024) } } });
    expect(res.status).toBe(413);
    expectNoCall();
  });

  function expectNoCall() {
    expect(h.templates.calls).toHaveLength(0);
  }
});
