import { newId } from "@emailsvc/ids";
import { openTestStore, STORE_KINDS, type TestStore } from "@emailsvc/testing";
import { emptyCounts, type CampaignStatus } from "../src/domain/campaign.js";
import { CampaignStorage } from "../src/storage/repositories.js";
import { scopeOf, type Scope } from "../src/usecases/deps.js";
import { listCampaigns } from "../src/usecases/list-campaigns.js";

// ListCampaigns with a status filter (the dashboard's running campaigns), on
// both stores: only the tenant's campaigns in those states, oldest first, in
// pages whose cursor belongs to the filter.

describe.each(STORE_KINDS)("listCampaigns by status (%s)", (kind) => {
  let test: TestStore;
  let scope: Scope;
  let other: Scope;
  beforeEach(async () => {
    test = await openTestStore(kind, "campaigns");
    const storage = new CampaignStorage(test.store);
    await storage.createIndexes();
    const forTenant = (tenant: string) => storage.forTenant(tenant);
    scope = scopeOf(forTenant, { tenant: { accountId: newId("acc"), mode: "test" }, actor: "test", requestId: "" });
    other = scopeOf(forTenant, { tenant: { accountId: newId("acc"), mode: "test" }, actor: "test", requestId: "" });
  });
  afterEach(async () => {
    await test.store.close();
    test.cleanup();
  });

  async function campaign(target: Scope, status: CampaignStatus): Promise<string> {
    const id = newId("cmp");
    await target.campaigns.insertOne({
      _id: id,
      name: status,
      template_id: newId("tpl"),
      tag_filter: {},
      status,
      created_at: Date.now(),
      updated_at: Date.now(),
      counts: emptyCounts(),
      snapshot_complete: false,
      snapshot_after: "",
      version: 1,
      outbox: [],
      outbox_pending: false,
    });
    return id;
  }

  it("lists only the states asked for, page by page, and refuses a cursor of another filter", async () => {
    const sending1 = await campaign(scope, "sending");
    await campaign(scope, "draft");
    const paused = await campaign(scope, "paused");
    await campaign(scope, "sent");
    const sending2 = await campaign(scope, "sending");
    await campaign(other, "sending");

    const first = await listCampaigns(scope, { limit: 2, cursor: "", statuses: ["sending", "paused"] });
    expect(first.items.map((c) => c.id)).toEqual([sending1, paused]);
    const second = await listCampaigns(scope, { limit: 2, cursor: first.nextCursor, statuses: ["paused", "sending"] });
    expect(second.items.map((c) => c.id)).toEqual([sending2]);
    expect(second.nextCursor).toBe("");
    expect((await listCampaigns(scope, { limit: 50, cursor: "" })).items).toHaveLength(5);
    await expect(listCampaigns(scope, { limit: 2, cursor: first.nextCursor })).rejects.toThrow();
  });
});
