import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// What the dashboard's template editor reads besides a template: the preview
// of unsaved content (POST /api/v1/templates/preview: the checks of create,
// MJML problems by line, nothing stored) and the versions a template keeps
// (GET /api/v1/templates/{id}/versions[/{version}]). Both stores.

const mjml = (text: string) => `<mjml>\n  <mj-body>\n    <mj-section>\n      <mj-column>\n        <mj-text>${text}</mj-text>\n      </mj-column>\n    </mj-section>\n  </mj-body>\n</mjml>\n`;

describe.each(["embedded", "mongodb"] as const)("the template editor's API (%s)", (store) => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform(`template-editor-${store}`, undefined, { mongo: store === "mongodb" });
  }, 60_000);
  afterAll(() => t?.close());

  it("renders unsaved content with the variables given, names the ones it reads, and stores nothing", async () => {
    const before = (await t.call("GET", "/api/v1/templates")).body.items.length;
    const res = await t.call("POST", "/api/v1/templates/preview", {
      body: { subject: "Order {{order.id}} for {{first_name}}", mjml_content: mjml("Hello {{first_name}}, total {{order.total}}"), variables: { first_name: "Ada <3" } },
    });
    expect(res.status).toBe(200);
    // An empty variable leaves its space out of the subject (one line, spaces collapsed).
    expect(res.body.subject).toBe("Order for Ada <3");
    expect(res.body.html).toContain("Hello Ada &lt;3, total ");
    expect(res.body.text).toContain("Hello Ada <3");
    expect(res.body.variables).toEqual(["first_name", "order.id", "order.total"]);
    expect(res.body.missing_variables).toEqual(["order.id", "order.total"]);
    expect((await t.call("GET", "/api/v1/templates")).body.items.length).toBe(before);
  });

  it("answers MJML that does not compile with its lines, as create does", async () => {
    const broken = "<mjml>\n  <mj-body>\n    <mj-section>\n      <mj-column>\n        <mj-text>Hi\n      </mj-column>\n    </mj-section>\n  </mj-body>\n</mjml>\n";
    const draft = await t.call("POST", "/api/v1/templates/preview", { body: { subject: "Hi", mjml_content: broken } });
    expect(draft.status).toBe(400);
    expect(draft.body.code).toBe("invalid_mjml");
    expect(draft.body.errors[0]).toEqual({ field: "mjml_content", message: expect.stringMatching(/^line 5: /) });
    const created = await t.call("POST", "/api/v1/templates", { body: { name: "Broken", subject: "Hi", category: "transactional", mjml_content: broken } });
    expect([created.status, created.body.code, created.body.errors]).toEqual([400, "invalid_mjml", draft.body.errors]);
    const subject = await t.call("POST", "/api/v1/templates/preview", { body: { subject: "Hi {{#if x}}", mjml_content: mjml("x") } });
    expect([subject.status, subject.body.code, subject.body.errors[0].field]).toEqual([400, "invalid_template", "subject"]);
    const missing = await t.call("POST", "/api/v1/templates/preview", { body: { subject: "Hi" } });
    expect([missing.status, missing.body.code]).toEqual([400, "validation_failed"]);
  });

  it("lists a template's committed versions newest first, in pages, and reads an old one with its MJML", async () => {
    const created = await t.call("POST", "/api/v1/templates", { body: { name: "Versions", subject: "One", category: "transactional", mjml_content: mjml("first") } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect((await t.call("PATCH", `/api/v1/templates/${id}`, { body: { subject: "Two {{name}}" } })).body.version).toBe(2);
    // A change of the name alone makes no version.
    expect((await t.call("PATCH", `/api/v1/templates/${id}`, { body: { name: "Renamed" } })).body.version).toBe(2);
    expect((await t.call("PATCH", `/api/v1/templates/${id}`, { body: { mjml_content: mjml("third") } })).body.version).toBe(3);

    const all = await t.call("GET", `/api/v1/templates/${id}/versions`);
    expect(all.status).toBe(200);
    expect(all.body.items.map((v: { version: number; subject: string }) => [v.version, v.subject])).toEqual([
      [3, "Two {{name}}"],
      [2, "Two {{name}}"],
      [1, "One"],
    ]);
    expect(all.body.items[0].variables).toEqual(["name"]);
    expect(all.body.items[0]).not.toHaveProperty("mjml_content");
    expect(all.body.next_cursor).toBeNull();

    const first = await t.call("GET", `/api/v1/templates/${id}/versions?limit=2`);
    expect(first.body.items.map((v: { version: number }) => v.version)).toEqual([3, 2]);
    const rest = await t.call("GET", `/api/v1/templates/${id}/versions?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(rest.body.items.map((v: { version: number }) => v.version)).toEqual([1]);
    expect(rest.body.next_cursor).toBeNull();
    // A cursor is the template's own.
    const other = await t.call("POST", "/api/v1/templates", { body: { name: "Other", subject: "x", category: "transactional", mjml_content: mjml("x") } });
    const foreign = await t.call("GET", `/api/v1/templates/${other.body.id}/versions?cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(foreign.status).toBe(400);

    const old = await t.call("GET", `/api/v1/templates/${id}/versions/1`);
    expect(old.status).toBe(200);
    expect(old.body).toMatchObject({ version: 1, subject: "One", mjml_content: mjml("first"), from_email: null });
    expect((await t.call("GET", `/api/v1/templates/${id}/versions/3`)).body.mjml_content).toBe(mjml("third"));
    expect((await t.call("GET", `/api/v1/templates/${id}/versions/4`)).status).toBe(404);
    expect((await t.call("GET", `/api/v1/templates/${id}/versions/0`)).status).toBe(400);

    expect((await t.call("DELETE", `/api/v1/templates/${other.body.id}`)).status).toBe(204);
    expect((await t.call("GET", `/api/v1/templates/${other.body.id}/versions`)).status).toBe(404);
    expect((await t.call("GET", `/api/v1/templates/${other.body.id}/versions/1`)).status).toBe(404);
  });
});
