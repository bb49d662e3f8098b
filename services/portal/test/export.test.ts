import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { campaigns, delivery, SubscriberService } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { createServiceTransport } from "@emailsvc/grpc";
import { type CallContext } from "@emailsvc/tenancy";
import { freePort } from "@emailsvc/testing";
import { exportSources } from "../src/rpc/clients";
import { exportData } from "../src/usecases/export";
import { UNLIMITED } from "../src/usecases/budgets";

// The export's one rule beyond assembly: a service that does not give its part
// fails the whole export, never a partial one. The subscribers and campaigns
// parts come from in-test routers; delivery is a real address nobody listens
// on, as when its pods are down.

const call: CallContext = { tenant: { accountId: "acc_01jd3x0k8m7y6t5r4q3p2n1m0k", mode: "test" }, actor: "portal", requestId: "" };
const subscriberId = "sub_01jd3x0k8m7y6t5r4q3p2n1m0k";
const audit = { source: "portal", ip: "127.0.0.1", userAgent: "test" };

const subscribers = createRouterTransport(({ service }) => {
  service(SubscriberService, {
    exportSubscriberData: (req: { subscriberId: string }) => {
      if (req.subscriberId !== subscriberId) throw new ConnectError("subscriber not found", Code.NotFound);
      return { json: JSON.stringify({ profile: { id: subscriberId }, tags: [], audit_trail: [], consent: [] }) };
    },
  } as never);
});
const campaignsPart = createRouterTransport(({ service }) => {
  service(campaigns.CampaignService, { exportSubscriberData: () => ({ json: JSON.stringify({ campaign_memberships: [], trigger_sends: [] }) }) } as never);
});
const deliveryPart = createRouterTransport(({ service }) => {
  service(delivery.DeliveryService, { exportSubscriberData: () => ({ json: JSON.stringify({ emails: [{ id: "eml_1" }] }) }) } as never);
});

describe("the export", () => {
  it("holds every service's part and what the person is to be told", async () => {
    const sources = exportSources({ subscribers, delivery: deliveryPart, campaigns: campaignsPart });
    const doc = JSON.parse(await exportData({ sources, budgets: UNLIMITED, now: () => Date.parse("2026-11-23T10:00:00Z") }, { call, subscriberId }, audit));
    expect(doc.export).toEqual({ format_version: 1, generated_at: "2026-11-23T10:00:00.000Z", subscriber_id: subscriberId });
    expect(doc.profile).toEqual({ id: subscriberId });
    expect(doc.emails).toEqual([{ id: "eml_1" }]);
    expect(doc.campaign_memberships).toEqual([]);
    expect(Object.keys(doc.about_this_data).sort()).toEqual(["automated_decisions", "categories", "controller", "purposes", "recipients", "retention", "rights", "source"]);
  });

  it("fails as a whole when a service does not answer", async () => {
    const down = createServiceTransport(`http://127.0.0.1:${await freePort()}`);
    const sources = exportSources({ subscribers, delivery: down, campaigns: campaignsPart });
    const failed = exportData({ sources, budgets: UNLIMITED, now: Date.now }, { call, subscriberId }, audit);
    await expect(failed).rejects.toBeInstanceOf(AppError);
    await expect(failed).rejects.toMatchObject({ kind: "unavailable", code: "export_incomplete" });
  });

  it("fails as a whole when a part is not of its type (each part's keys, as @emailsvc/proto types it)", async () => {
    const renamed = createRouterTransport(({ service }) => {
      service(campaigns.CampaignService, { exportSubscriberData: () => ({ json: JSON.stringify({ memberships: [], trigger_sends: [] }) }) } as never);
    });
    const sources = exportSources({ subscribers, delivery: deliveryPart, campaigns: renamed });
    await expect(exportData({ sources, budgets: UNLIMITED, now: Date.now }, { call, subscriberId }, audit)).rejects.toThrow(
      "the campaigns service's export part does not have the keys campaign_memberships, trigger_sends (campaign_memberships, memberships)",
    );
  });

  it("has nothing for a subscriber the subscribers service does not know (erased: the token is dead)", async () => {
    const sources = exportSources({ subscribers, delivery: deliveryPart, campaigns: campaignsPart });
    await expect(exportData({ sources, budgets: UNLIMITED, now: Date.now }, { call, subscriberId: "sub_00000000000000000000000000" }, audit)).rejects.toMatchObject({
      kind: "unauthenticated",
      code: "invalid_preference_token",
    });
  });
});
