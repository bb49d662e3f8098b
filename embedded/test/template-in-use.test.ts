import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Issue 16, defect 5: deleting a template a trigger used answered 204, and the
// trigger stayed active and dropped every fire. Through the REST API: a
// template in use (a trigger, active or not; a campaign that may still send
// it) is not deleted: 409 `template_in_use` naming them, and nothing changes;
// once they are gone (or the campaign has finished) the delete goes through.
// On the embedded store and on the MongoDB-compatible server.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";

describe.each(["embedded", "mongodb"] as const)("deleting a template in use (%s)", (store) => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform(`template-in-use-${store}`, undefined, { mongo: store === "mongodb" });
    expect((await t.call("POST", "/api/v1/tags", { body: { name: "readers" } })).status).toBe(201);
    expect((await t.call("POST", "/api/v1/subscribers", { body: { email: `reader-${store}@example.com`, tags: ["readers"], metadata: { name: "R" } } })).status).toBe(201);
  }, 60_000);
  afterAll(() => t?.close());

  const template = async (name: string) => {
    const res = await t.call("POST", "/api/v1/templates", { body: { name, subject: `${name} {{metadata.name}}`, category: "marketing", mjml_content: MJML } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  it("refuses while a trigger uses it, naming the trigger, and changes nothing", async () => {
    const tpl = await template("Welcome in use");
    const trigger = await t.call("POST", "/api/v1/triggers", { body: { event_type: "subscriber.created", template_id: tpl } });
    expect(trigger.status).toBe(201);
    const off = await t.call("POST", "/api/v1/triggers", { body: { event_type: "subscriber.tag_added", template_id: tpl } });
    expect((await t.call("PATCH", `/api/v1/triggers/${off.body.id}`, { body: { is_active: false } })).body.is_active).toBe(false);

    const refused = await t.call("DELETE", `/api/v1/templates/${tpl}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("template_in_use");
    expect(refused.body.detail).toContain(`trigger ${trigger.body.id} (active)`);
    expect(refused.body.detail).toContain(`trigger ${off.body.id} (inactive)`);
    // Nothing changed: the template is there, the triggers are as they were.
    expect((await t.call("GET", `/api/v1/templates/${tpl}`)).status).toBe(200);
    const still = await t.call("GET", `/api/v1/triggers/${trigger.body.id}`);
    expect(still.body).toMatchObject({ is_active: true, disabled_reason: null, last_failure: null });

    // Once nothing uses it, it goes.
    expect((await t.call("DELETE", `/api/v1/triggers/${trigger.body.id}`)).status).toBe(204);
    expect((await t.call("DELETE", `/api/v1/templates/${tpl}`)).status).toBe(409);
    expect((await t.call("DELETE", `/api/v1/triggers/${off.body.id}`)).status).toBe(204);
    expect((await t.call("DELETE", `/api/v1/templates/${tpl}`)).status).toBe(204);
    expect((await t.call("GET", `/api/v1/templates/${tpl}`)).status).toBe(404);
  });

  it("refuses while a campaign may still send it, and not once the campaign has finished", async () => {
    const tpl = await template("Newsletter in use");
    const draft = await t.call("POST", "/api/v1/campaigns", { body: { name: "Draft", template_id: tpl, tag_filter: { include_tags: ["readers"] } } });
    expect(draft.status).toBe(201);
    const refused = await t.call("DELETE", `/api/v1/templates/${tpl}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("template_in_use");
    expect(refused.body.detail).toContain(`campaign ${draft.body.id} (draft)`);

    // Scheduled: still a user. Cancelled: history, no longer one.
    const later = await t.call("POST", `/api/v1/campaigns/${draft.body.id}/send`, { body: { send_at: new Date(Date.now() + 3_600_000).toISOString() } });
    expect(later.body.status).toBe("scheduled");
    expect((await t.call("DELETE", `/api/v1/templates/${tpl}`)).body.detail).toContain(`campaign ${draft.body.id} (scheduled)`);
    expect((await t.call("POST", `/api/v1/campaigns/${draft.body.id}/cancel`)).body.status).toBe("cancelled");

    // Sent: history too.
    const now = await t.call("POST", "/api/v1/campaigns", { body: { name: "Now", template_id: tpl, tag_filter: { include_tags: ["readers"] } } });
    expect((await t.call("POST", `/api/v1/campaigns/${now.body.id}/send`)).status).toBe(200);
    const done = await eventually(
      async () => (await t.call("GET", `/api/v1/campaigns/${now.body.id}`)).body,
      (c) => c.status === "sent",
      1200,
    );
    expect(done.status).toBe("sent");
    expect((await t.call("DELETE", `/api/v1/templates/${tpl}`)).status).toBe(204);
  }, 60_000);
});
