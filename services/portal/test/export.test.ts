import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { campaigns, delivery, portal, SubscriberService, templates } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { createServiceTransport } from "@emailsvc/grpc";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import { freePort, memoryLogger, openTestStore } from "@emailsvc/testing";
import { startPortalService } from "../src";
import { exportSources } from "../src/rpc/clients";
import { exportData, type ExportDeps } from "../src/usecases/export";
import { UNLIMITED } from "../src/usecases/budgets";

// The export's rules beyond assembly: a service that does not give its part
// fails the whole export, never a partial one; a part with a key this portal
// does not know yet (a service upgraded first) is exported whole. The
// services' parts come from in-test routers; a service down is a real address
// nobody listens on, as when its pods are down.

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
const deliveryAnswering = (part: Record<string, unknown>) =>
  createRouterTransport(({ service }) => {
    service(delivery.DeliveryService, { exportSubscriberData: () => ({ json: JSON.stringify(part) }) } as never);
  });
const deps = (sources: ExportDeps["sources"], now: () => number = Date.now): ExportDeps => ({ sources, budgets: UNLIMITED, logger: memoryLogger().logger, now });

describe("the export", () => {
  it("holds every service's part and what the person is to be told", async () => {
    const sources = exportSources({ subscribers, delivery: deliveryPart, campaigns: campaignsPart });
    const doc = JSON.parse(await exportData(deps(sources, () => Date.parse("2026-11-23T10:00:00Z")), { call, subscriberId }, audit));
    expect(doc.export).toEqual({ format_version: 1, generated_at: "2026-11-23T10:00:00.000Z", subscriber_id: subscriberId });
    expect(doc.profile).toEqual({ id: subscriberId });
    expect(doc.emails).toEqual([{ id: "eml_1" }]);
    expect(doc.campaign_memberships).toEqual([]);
    expect(Object.keys(doc.about_this_data).sort()).toEqual(["automated_decisions", "categories", "controller", "purposes", "recipients", "retention", "rights", "source"]);
  });

  it("fails as a whole when a service does not answer", async () => {
    const down = createServiceTransport(`http://127.0.0.1:${await freePort()}`);
    const sources = exportSources({ subscribers, delivery: down, campaigns: campaignsPart });
    const failed = exportData(deps(sources), { call, subscriberId }, audit);
    await expect(failed).rejects.toBeInstanceOf(AppError);
    await expect(failed).rejects.toMatchObject({ kind: "unavailable", code: "export_incomplete" });
  });

  it("fails as a whole when a part is not of its type (each part's keys, as @emailsvc/proto types it)", async () => {
    const renamed = createRouterTransport(({ service }) => {
      service(campaigns.CampaignService, { exportSubscriberData: () => ({ json: JSON.stringify({ memberships: [], trigger_sends: [] }) }) } as never);
    });
    const sources = exportSources({ subscribers, delivery: deliveryPart, campaigns: renamed });
    await expect(exportData(deps(sources), { call, subscriberId }, audit)).rejects.toThrow(
      "the campaigns service's export part does not have the keys campaign_memberships, trigger_sends (campaign_memberships missing)",
    );
    const notAList = exportSources({ subscribers, delivery: deliveryAnswering({ emails: {} }), campaigns: campaignsPart });
    await expect(exportData(deps(notAList), { call, subscriberId }, audit)).rejects.toThrow("the delivery service's export part has a emails that is no list");
  });

  it("fails rather than give one of two values when a newer key of a part names what the export holds already", async () => {
    for (const key of ["profile", "trigger_sends", "export", "about_this_data"]) {
      const sources = exportSources({ subscribers, delivery: deliveryAnswering({ emails: [], [key]: { x: 1 } }), campaigns: campaignsPart });
      await expect(exportData(deps(sources), { call, subscriberId }, audit)).rejects.toThrow(`the delivery service's export part has a key ${key} the export holds already`);
    }
  });

  it("has nothing for a subscriber the subscribers service does not know (erased: the token is dead)", async () => {
    const sources = exportSources({ subscribers, delivery: deliveryPart, campaigns: campaignsPart });
    await expect(exportData(deps(sources), { call, subscriberId: "sub_00000000000000000000000000" }, audit)).rejects.toMatchObject({
      kind: "unauthenticated",
      code: "invalid_preference_token",
    });
  });
});

describe("the export over the portal's gRPC API during a rolling upgrade (issue 16 review)", () => {
  // Delivery, upgraded before the portal, answers a key the portal's types do
  // not list yet. The export must still be given, and whole: that key holds
  // the subscriber's data too (GDPR Art. 15), so it is in the document as
  // delivery wrote it, and the portal's log names it (never its values).
  it("exports a part's key the portal does not know, as the service wrote it, and logs its name only", async () => {
    const newer = deliveryAnswering({ emails: [{ id: "eml_1" }], suppressed_until: [{ email_id: "eml_1", until: "2026-12-01T00:00:00Z", note: "private-value" }] });
    const { logger, logs } = memoryLogger("portal");
    const test = await openTestStore("embedded", "portal-export");
    const refused = createRouterTransport(() => undefined);
    const service = await startPortalService({ store: test.store, logger, port: 0, host: "127.0.0.1", subscribers, delivery: newer, campaigns: campaignsPart, templates: refused });
    try {
      const client = createClient(portal.PreferenceCenterService, createServiceTransport(service.url));
      const res = await client.exportData({ subscriberId, audit: { source: "api", ip: "", userAgent: "" } }, { headers: callHeaders(call) });
      const doc = JSON.parse(res.json);
      expect(doc.emails).toEqual([{ id: "eml_1" }]);
      expect(doc.suppressed_until).toEqual([{ email_id: "eml_1", until: "2026-12-01T00:00:00Z", note: "private-value" }]);
      expect(Object.keys(doc)).toEqual([
        "export",
        "profile",
        "tags",
        "audit_trail",
        "consent",
        "emails",
        "suppressed_until",
        "campaign_memberships",
        "trigger_sends",
        "about_this_data",
      ]);
      const said = logs.filter((line) => line.service === "delivery" && Array.isArray(line.keys));
      expect(said.map((line) => [line.level, line.keys])).toEqual([[40, ["suppressed_until"]]]);
      expect(JSON.stringify(logs)).not.toContain("private-value");
    } finally {
      await service.close();
      await test.store.close();
      test.cleanup();
    }
  });
});
