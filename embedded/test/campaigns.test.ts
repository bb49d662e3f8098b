import { ADMIN_TOKEN, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Campaign drafts through the real platform: REST → gateway → campaigns →
// subscribers (AudienceService) and templates over gRPC, on the embedded store
// and on the MongoDB-compatible server. Every response is checked against the
// OpenAPI document the gateway serves.

describe.each(["embedded", "mongodb"] as const)("campaign drafts (%s)", (store) => {
  let t: TestPlatform;
  let templateId: string;
  beforeAll(async () => {
    t = await startTestPlatform(`campaigns-${store}`, undefined, { mongo: store === "mongodb" });
    for (const name of ["vip", "news", "churned"]) {
      expect((await t.call("POST", "/api/v1/tags", { body: { name } })).status).toBe(201);
    }
    const people: Array<{ email: string; tags: string[]; metadata?: Record<string, unknown>; status?: string }> = [
      { email: "ann@example.com", tags: ["vip", "news"], metadata: { plan: "pro", seats: 5 } },
      { email: "bob@example.com", tags: ["news"], metadata: { plan: "free" } },
      { email: "cid@example.com", tags: ["vip"], metadata: { plan: "pro", trial: true } },
      { email: "dee@example.com", tags: ["news", "churned"] },
      { email: "eve@example.com", tags: ["vip", "news"], status: "unsubscribed" },
      { email: "fay@example.com", tags: [] },
    ];
    for (const person of people) {
      const res = await t.call("POST", "/api/v1/subscribers", { body: person });
      expect(res.status).toBe(201);
    }
    const template = await t.call("POST", "/api/v1/templates", {
      body: {
        name: "Newsletter",
        subject: "News for {{metadata.plan}}",
        category: "marketing",
        mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hello</mj-text></mj-column></mj-section></mj-body></mjml>",
      },
    });
    expect(template.status).toBe(201);
    templateId = template.body.id as string;
  }, 60_000);
  afterAll(() => t?.close());

  const count = async (tag_filter: Record<string, unknown>) => {
    const res = await t.call("POST", "/api/v1/campaigns/recipient-count", { body: { tag_filter } });
    expect(res.status).toBe(200);
    return res.body.count as number;
  };

  describe("drafts", () => {
    it("creates, reads, lists, changes and deletes a draft", async () => {
      const created = await t.call("POST", "/api/v1/campaigns", {
        body: { name: "November news", template_id: templateId, tag_filter: { include_tags: ["news"], match: "any" } },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        name: "November news",
        template_id: templateId,
        status: "draft",
        tag_filter: { include_tags: ["news"], match: "any", exclude_tags: [], metadata: [] },
      });
      const id = created.body.id as string;
      expect(id).toMatch(/^cmp_/);

      expect((await t.call("GET", `/api/v1/campaigns/${id}`)).body).toEqual(created.body);
      const page = await t.call("GET", "/api/v1/campaigns?limit=10");
      expect(page.body.items.map((c: { id: string }) => c.id)).toContain(id);

      // ann, bob, dee hold news and are active (eve unsubscribed).
      expect((await t.call("GET", `/api/v1/campaigns/${id}/recipient-count`)).body).toEqual({ count: 3 });

      const changed = await t.call("PATCH", `/api/v1/campaigns/${id}`, {
        body: { name: "VIP news", tag_filter: { include_tags: ["vip", "news"], match: "all" } },
      });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ name: "VIP news", tag_filter: { include_tags: ["vip", "news"], match: "all" } });
      expect((await t.call("GET", `/api/v1/campaigns/${id}/recipient-count`)).body).toEqual({ count: 1 });

      expect((await t.call("DELETE", `/api/v1/campaigns/${id}`)).status).toBe(204);
      expect((await t.call("GET", `/api/v1/campaigns/${id}`)).status).toBe(404);
      expect((await t.call("GET", `/api/v1/campaigns/${id}/recipient-count`)).status).toBe(404);
    });

    it("counts an audience without a campaign: any, all, exclude and metadata conditions", async () => {
      expect(await count({})).toBe(5); // every active subscriber
      expect(await count({ include_tags: ["vip"] })).toBe(2); // ann, cid
      expect(await count({ include_tags: ["VIP", "news"], match: "any" })).toBe(4); // ann, bob, cid, dee
      expect(await count({ include_tags: ["vip", "news"], match: "all" })).toBe(1); // ann
      expect(await count({ include_tags: ["news"], exclude_tags: ["churned"] })).toBe(2); // ann, bob
      expect(await count({ metadata: [{ key: "plan", equals: "pro" }] })).toBe(2); // ann, cid
      expect(await count({ metadata: [{ key: "plan", in: ["pro", "free"] }] })).toBe(3);
      expect(await count({ metadata: [{ key: "trial", exists: true }] })).toBe(1);
      expect(await count({ metadata: [{ key: "plan", exists: false }] })).toBe(2); // dee, fay
      expect(await count({ include_tags: ["vip"], metadata: [{ key: "seats", equals: 5 }] })).toBe(1);
    });

    it("refuses unknown tags naming them, and another account's or unknown template with 404", async () => {
      const unknown = await t.call("POST", "/api/v1/campaigns", {
        body: { name: "x", template_id: templateId, tag_filter: { include_tags: ["news", "nope"], exclude_tags: ["gone"] } },
      });
      expect(unknown.status).toBe(400);
      expect(unknown.body.code).toBe("unknown_tags");
      expect(unknown.body.errors).toEqual([
        { field: "tag_filter.include_tags[1]", message: 'no tag named "nope"' },
        { field: "tag_filter.exclude_tags[0]", message: 'no tag named "gone"' },
      ]);

      const missing = await t.call("POST", "/api/v1/campaigns", { body: { name: "x", template_id: "tpl_00000000000000000000000000", tag_filter: {} } });
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe("template_not_found");

      // Another account: its own template is unknown here, and this campaign is unknown there.
      const other = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Other" } });
      const otherKey = (await t.call("POST", `/admin/v1/accounts/${other.body.id}/api-keys`, { admin: true, body: { mode: "test" } })).body.key as string;
      expect(ADMIN_TOKEN).toBeTruthy();
      const foreign = await t.call("POST", "/api/v1/campaigns", { key: otherKey, body: { name: "x", template_id: templateId, tag_filter: {} } });
      expect(foreign.status).toBe(404);
      const mine = await t.call("POST", "/api/v1/campaigns", { body: { name: "mine", template_id: templateId, tag_filter: {} } });
      expect(mine.status).toBe(201);
      expect((await t.call("GET", `/api/v1/campaigns/${mine.body.id}`, { key: otherKey })).status).toBe(404);
      expect((await t.call("DELETE", `/api/v1/campaigns/${mine.body.id}`, { key: otherKey })).status).toBe(404);
      expect((await t.call("GET", `/api/v1/campaigns/${mine.body.id}`)).status).toBe(200);
    });

    it("refuses bad drafts with a 400 and stores nothing", async () => {
      const before = (await t.call("GET", "/api/v1/campaigns?limit=500")).body.items.length as number;
      const bad = [
        { name: "x", template_id: templateId },
        { name: " ", template_id: templateId, tag_filter: {} },
        { name: "x", template_id: templateId, tag_filter: { match: "most" } },
        { name: "x", template_id: templateId, tag_filter: { metadata: [{ key: "plan", equals: "pro", exists: true }] } },
        { name: "x", template_id: templateId, tag_filter: { metadata: [{ key: "plan" }] } },
        { name: "x", template_id: templateId, tag_filter: { metadata: [{ key: "-bad", exists: true }] } },
        { name: "x", template_id: templateId, tag_filter: { metadata: [{ key: "plan", equals: { nested: true } }] } },
      ];
      for (const body of bad) {
        const res = await t.call("POST", "/api/v1/campaigns", { body });
        expect({ body, status: res.status }).toEqual({ body, status: 400 });
      }
      expect((await t.call("GET", "/api/v1/campaigns?limit=500")).body.items.length).toBe(before);
    });
  });
});
