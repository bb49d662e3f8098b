import { allItems, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The emails log narrowed by status, by campaign and by subscriber (GET
// /api/v1/emails?status=…&campaign_id=…&subscriber_id=…): what the
// dashboard's log filter, a campaign's failures and a subscriber's emails read. Both stores: the filters are queries of each.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";

interface EmailJson {
  id: string;
  to: string | null;
  status: string;
  error: string | null;
}

describe.each(["embedded", "mongodb+kafka"] as const)("the emails log's filters (%s)", (store) => {
  let t: TestPlatform;
  beforeAll(async () => {
    const real = store === "mongodb+kafka";
    t = await startTestPlatform(`email-log-filters-${real ? "real" : store}`, undefined, { mongo: real, kafka: real });
  }, 60_000);
  afterAll(() => t?.close());

  const ids = (items: EmailJson[]) => items.map((e) => e.id).sort();
  const list = async (query: string) => {
    const res = await t.call("GET", `/api/v1/emails?${query}`);
    expect(res.status).toBe(200);
    return res.body as { items: EmailJson[]; next_cursor: string | null };
  };

  it("lists only the emails of one status, of one campaign, or both; a cursor keeps its filter", async () => {
    const template = await t.call("POST", "/api/v1/templates", { body: { name: "Letter", subject: "Letter", category: "marketing", mjml_content: MJML } });
    expect(template.status).toBe(201);
    expect((await t.call("POST", "/api/v1/tags", { body: { name: "readers" } })).status).toBe(201);
    const subscriberIds: Record<string, string> = {};
    for (const name of ["ann", "bob", "cyd"]) {
      const body = { email: `${name}@example.com`, metadata: { name }, tags: name === "cyd" ? [] : ["readers"] };
      const created = await t.call("POST", "/api/v1/subscribers", { body });
      expect(created.status).toBe(201);
      subscriberIds[name] = created.body.id as string;
    }
    // A suppressed address: its marketing mail is refused at once (status suppressed).
    expect((await t.call("POST", "/api/v1/suppressions", { body: { email: "blocked@example.com", reason: "manual" } })).status).toBe(201);
    const refused = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: template.body.slug, to: "blocked@example.com" } });
    expect(refused.body.status).toBe("suppressed");
    const single = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: template.body.slug, to: "cyd@example.com" } });
    expect(single.status).toBe(202);

    const campaign = await t.call("POST", "/api/v1/campaigns", { body: { name: "Readers", template_id: template.body.id, tag_filter: { include_tags: ["readers"] } } });
    expect((await t.call("POST", `/api/v1/campaigns/${campaign.body.id}/send`)).status).toBe(200);
    await eventually(() => t.call("GET", `/api/v1/campaigns/${campaign.body.id}`), (res) => res.body.status === "sent", 600);
    const all = await eventually(() => allItems<EmailJson>((path) => t.call("GET", path), "/api/v1/emails"), (items) => items.filter((e) => e.status === "sent").length === 3, 600);
    expect(all).toHaveLength(4);

    expect(ids((await list("status=suppressed")).items)).toEqual([refused.body.id]);
    const sent = (await list("status=sent")).items;
    expect(sent.map((e) => e.to).sort()).toEqual(["ann@example.com", "bob@example.com", "cyd@example.com"]);
    expect((await list("status=bounced")).items).toEqual([]);

    const ofCampaign = (await list(`campaign_id=${campaign.body.id}`)).items;
    expect(ofCampaign.map((e) => e.to).sort()).toEqual(["ann@example.com", "bob@example.com"]);
    expect(ids((await list(`campaign_id=${campaign.body.id}&status=sent`)).items)).toEqual(ids(ofCampaign));
    expect((await list(`campaign_id=${campaign.body.id}&status=failed`)).items).toEqual([]);
    expect((await list("campaign_id=cmp_none")).items).toEqual([]);

    // A subscriber's emails (their page in the dashboard): the campaign's to ann, the single send to cyd.
    const ofAnn = (await list(`subscriber_id=${subscriberIds.ann}`)).items;
    expect(ofAnn.map((e) => e.to)).toEqual(["ann@example.com"]);
    expect(ids(ofAnn)).toEqual(ids(ofCampaign.filter((e) => e.to === "ann@example.com")));
    expect(ids((await list(`subscriber_id=${subscriberIds.cyd}`)).items)).toEqual([single.body.id]);
    expect((await list(`subscriber_id=${subscriberIds.cyd}&campaign_id=${campaign.body.id}`)).items).toEqual([]);
    expect((await list("subscriber_id=sub_none")).items).toEqual([]);

    // Pages of one filter, newest first, never mixing in another status.
    const first = await list(`status=sent&limit=2`);
    expect(first.items).toHaveLength(2);
    const second = await list(`status=sent&limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second.items).toHaveLength(1);
    expect(ids([...first.items, ...second.items])).toEqual(ids(sent));
    expect(second.next_cursor).toBeNull();
    // The cursor of one filter is refused with another (it would skip or repeat emails).
    const mixed = await t.call("GET", `/api/v1/emails?status=suppressed&limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(mixed.status).toBe(400);

    const bad = await t.call("GET", "/api/v1/emails?status=lost");
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("validation_failed");
  }, 120_000);
});
