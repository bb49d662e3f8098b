import { delivery } from "@emailsvc/proto";
import { newId } from "@emailsvc/ids";
import { createLogger } from "@emailsvc/telemetry";
import { encodeEvent, InProcessEventBus, publishEvents } from "@emailsvc/events";
import { topicsOf } from "@emailsvc/manifest";
import { openTestStore, STORE_KINDS, waitFor, type TestStore } from "@emailsvc/testing";
import { emptyCounts } from "../src/domain/campaign.js";
import { subscribeCampaignEvents } from "../src/messaging/consumer.js";
import type { TriggerWorker } from "../src/messaging/triggers.js";
import type { CampaignDoc } from "../src/storage/documents.js";
import { CampaignStorage, type TenantRepositories } from "../src/storage/repositories.js";
import type { Deps } from "../src/usecases/deps.js";
import { eraseSubscriberRows } from "../src/usecases/erase-subscriber.js";
import { countLedger, handOver, handOverHeld, moveRows, reconcile, rowId } from "../src/usecases/ledger.js";
import { recordOutcomes } from "../src/usecases/record-outcomes.js";
import { snapshotAudience } from "../src/usecases/snapshot-audience.js";
import { startDueCampaign } from "../src/usecases/start-due-campaign.js";
import { exportSubscriberCampaigns } from "../src/usecases/export-subscriber.js";

// The ledger's rules on both stores, with the subscribers and templates
// services faked (their answers are the input here; the platform tests in
// embedded/test/campaign-*.test.ts use the real ones): rows and counts move
// together, outcomes and skips, a snapshot resumed after a crash counts each
// recipient once, and a schedule missed for longer than the allowed age fails.

describe.each(STORE_KINDS)("campaign ledger (%s)", (kind) => {
  let test: TestStore;
  let repos: TenantRepositories;
  let clock: number;
  let audience: string[];
  let deps: Deps;
  const tenant = `${newId("acc")}:test`;

  beforeEach(async () => {
    test = await openTestStore(kind, "campaigns");
    const storage = new CampaignStorage(test.store);
    await storage.createIndexes();
    repos = storage.forTenant(tenant);
    clock = Date.now();
    audience = Array.from({ length: 12 }, () => newId("sub")).sort();
    deps = {
      audiences: {
        count: async () => audience.length,
        // Pages of 5: as AudienceService pages by id.
        page: async (_call, _filter, after, limit) => {
          const rest = audience.filter((id) => id > after);
          const ids = rest.slice(0, Math.min(limit, 5));
          return { ids, nextAfter: rest.length > ids.length ? ids[ids.length - 1]! : "" };
        },
      },
      templates: { exists: async () => true, currentVersion: async () => 3 },
      logger: createLogger("ledger-test", "silent"),
      now: () => clock,
      settings: { rate: null, dailyLimit: null, scheduleMaxAgeMs: 60_000, maxInFlight: 100, snapshotBudgetMs: 10_000 },
    };
  });
  afterEach(async () => {
    await test.store.close();
    test.cleanup();
  });

  async function campaign(fields: Partial<CampaignDoc>): Promise<CampaignDoc> {
    const doc = {
      _id: newId("cmp"),
      name: "Test",
      template_id: newId("tpl"),
      tag_filter: {},
      status: "sending" as const,
      created_at: clock,
      updated_at: clock,
      counts: emptyCounts(),
      snapshot_complete: false,
      snapshot_after: "",
      version: 1,
      outbox: [],
      outbox_pending: false,
      ...fields,
    };
    await repos.campaigns.insertOne(doc);
    return { ...doc, tenant } as CampaignDoc;
  }

  it("snapshots every recipient once, also when a copy interrupted by a crash is taken up again", async () => {
    const doc = await campaign({});
    // A crash after the first page's rows were written, before the resume point and the counts.
    const firstPage = audience.slice(0, 5);
    await repos.recipients.insertMany(
      firstPage.map((sub) => ({ _id: rowId(doc._id, sub), campaign_id: doc._id, subscriber_id: sub, email_id: newId("eml"), state: "pending" as const, reason: "", updated_at: clock })),
    );
    const done = await snapshotAudience(deps, repos, doc, clock + 60_000);
    expect(done?.snapshot_complete).toBe(true);
    expect(await repos.recipients.count({ campaign_id: doc._id })).toBe(12);
    // The counts missed the crashed page; a recount from the ledger puts it right.
    expect(done?.counts?.total).toBe(7);
    expect(await reconcile(repos, doc._id)).toMatchObject({ total: 12, pending: 12 });
  });

  it("moves rows and counts together; outcomes, skips and a late sent after a cancel add up", async () => {
    const doc = await campaign({ snapshot_complete: true });
    await snapshotAudience(deps, repos, { ...doc, snapshot_complete: false }, clock + 60_000);
    const [a, b, c, d, e] = audience;
    const ids = [a, b, c, d].map((s) => rowId(doc._id, s!));
    // Handed over: the position moves past them, in one write of the campaign's.
    await handOver(repos.campaigns, doc._id, ids.at(-1)!, ids.length);
    expect((await repos.campaigns.findOne({ _id: doc._id }))!.counts).toMatchObject({ pending: 8, queued: 4 });
    expect(await countLedger(repos, doc._id)).toMatchObject({ pending: 8, queued: 4 });
    // Moving them from pending matches nothing: guarded by the bucket left (the position).
    expect(await moveRows(repos, doc._id, ids, "pending", "skipped.unsubscribed", clock)).toBe(0);
    await recordOutcomes(
      repos,
      [
        { campaignId: doc._id, subscriberId: a!, status: "sent", failureReason: delivery.FailureReason.UNSPECIFIED },
        { campaignId: doc._id, subscriberId: b!, status: "failed", failureReason: delivery.FailureReason.RECIPIENT_REJECTED },
        { campaignId: doc._id, subscriberId: c!, status: "failed", failureReason: delivery.FailureReason.RECIPIENT_UNSUBSCRIBED },
        // Repeated: changes nothing more.
        { campaignId: doc._id, subscriberId: a!, status: "sent", failureReason: delivery.FailureReason.UNSPECIFIED },
      ],
      clock,
    );
    expect(await moveRows(repos, doc._id, [rowId(doc._id, e!)], "pending", "skipped.unsubscribed", clock)).toBe(1);
    // A cancel skips the rest; d's email was already with the provider and is sent after all.
    await moveRows(repos, doc._id, undefined, "pending", "skipped.cancelled", clock);
    await moveRows(repos, doc._id, undefined, "queued", "skipped.cancelled", clock);
    await recordOutcomes(repos, [{ campaignId: doc._id, subscriberId: d!, status: "sent", failureReason: delivery.FailureReason.UNSPECIFIED }], clock);
    const counts = (await repos.campaigns.findOne({ _id: doc._id }))!.counts!;
    expect(counts).toEqual({ total: 12, pending: 0, queued: 0, sent: 2, failed: 1, skipped: { unsubscribed: 2, erased: 0, suppressed: 0, cancelled: 7 } });
    expect(await countLedger(repos, doc._id)).toEqual(counts);
  });

  it("a hand-over is a position: held rows go back to pending and are handed over again; a cancel skips pending, held and in-flight rows", async () => {
    const doc = await campaign({});
    await snapshotAudience(deps, repos, doc, clock + 60_000);
    const [a, b, c, d, e, f] = audience.map((s) => rowId(doc._id, s));
    await handOver(repos.campaigns, doc._id, d!, 4);
    // Nothing was written on the rows: handed over is where they lie against the position.
    expect(await repos.recipients.count({ campaign_id: doc._id, state: "pending" })).toBe(12);
    const outcome = (row: string, status: string) => ({ campaignId: doc._id, subscriberId: row.split(":")[1]!, status, failureReason: delivery.FailureReason.UNSPECIFIED });
    // Paused: delivery holds c and d.
    await recordOutcomes(repos, [outcome(a!, "sent"), outcome(c!, "held"), outcome(d!, "held")], clock);
    const counted = async () => (await repos.campaigns.findOne({ _id: doc._id }))!.counts!;
    expect(await counted()).toMatchObject({ pending: 10, queued: 1, sent: 1 });
    expect(await countLedger(repos, doc._id)).toEqual(await counted());
    // A held row's email settled by another attempt (a redelivered batch; its outcome handled after the held):
    // the row is settled at once, and not handed over again.
    await recordOutcomes(repos, [outcome(c!, "sent")], clock);
    expect(await counted()).toMatchObject({ pending: 9, queued: 1, sent: 2 });
    expect(await handOverHeld(repos, doc._id, [c!, d!, e!], clock)).toBe(1);
    expect(await counted()).toMatchObject({ pending: 8, queued: 2, sent: 2 });
    expect(await countLedger(repos, doc._id)).toEqual(await counted());
    // Said again (delivery answers a settled email handed over again): nothing more moves.
    await recordOutcomes(repos, [outcome(c!, "sent")], clock);
    // The next hand-over moves the position on: e and f.
    await handOver(repos.campaigns, doc._id, f!, 2);
    expect(await counted()).toMatchObject({ pending: 6, queued: 4, sent: 2 });
    await recordOutcomes(repos, [outcome(e!, "held")], clock);
    // Cancelled: every row not done is skipped, whichever bucket; one sent in the same instant counts sent.
    await moveRows(repos, doc._id, undefined, "pending", "skipped.cancelled", clock);
    await moveRows(repos, doc._id, undefined, "queued", "skipped.cancelled", clock);
    await recordOutcomes(repos, [outcome(f!, "sent")], clock);
    // Sent after all: no reason left from the cancel.
    expect(await repos.recipients.findOne({ _id: f! })).toMatchObject({ state: "sent", reason: "" });
    const counts = await counted();
    expect(counts).toEqual({ total: 12, pending: 0, queued: 0, sent: 3, failed: 0, skipped: { unsubscribed: 0, erased: 0, suppressed: 0, cancelled: 9 } });
    expect(await countLedger(repos, doc._id)).toEqual(counts);
    expect(await repos.recipients.count({ campaign_id: doc._id, state: { $in: ["pending", "held"] } })).toBe(0);
  });

  it("a held and a settled outcome of one email end settled in whichever order they are handled, in one batch or two", async () => {
    const doc = await campaign({});
    await snapshotAudience(deps, repos, doc, clock + 60_000);
    const rows = audience.slice(0, 8).map((s) => rowId(doc._id, s));
    await handOver(repos.campaigns, doc._id, rows.at(-1)!, rows.length);
    const outcome = (row: string, status: string, failureReason = delivery.FailureReason.UNSPECIFIED) => ({
      campaignId: doc._id,
      subscriberId: row.split(":")[1]!,
      status,
      failureReason,
    });
    const [a, b, c, d, e, f, g, h] = rows;
    // held, then the outcome (two batches); the outcome, then held; both in one batch, either order.
    await recordOutcomes(repos, [outcome(a!, "held"), outcome(b!, "held")], clock);
    await recordOutcomes(repos, [outcome(a!, "sent"), outcome(b!, "failed", delivery.FailureReason.RECIPIENT_REJECTED)], clock);
    await recordOutcomes(repos, [outcome(c!, "sent"), outcome(d!, "failed", delivery.FailureReason.RECIPIENT_UNSUBSCRIBED)], clock);
    await recordOutcomes(repos, [outcome(c!, "held"), outcome(d!, "held")], clock);
    await recordOutcomes(repos, [outcome(e!, "held"), outcome(e!, "sent"), outcome(f!, "sent"), outcome(f!, "held")], clock);
    // Held alone: back in pending until handed over again.
    await recordOutcomes(repos, [outcome(g!, "held")], clock);
    const state = async (row: string) => {
      const found = await repos.recipients.findOne({ _id: row });
      return [found!.state, found!.reason ?? ""];
    };
    expect(await Promise.all([a, b, c, d, e, f, g, h].map((row) => state(row!)))).toEqual([
      ["sent", ""],
      ["failed", ""],
      ["sent", ""],
      ["skipped", "unsubscribed"],
      ["sent", ""],
      ["sent", ""],
      ["held", ""],
      ["pending", ""],
    ]);
    const counts = (await repos.campaigns.findOne({ _id: doc._id }))!.counts!;
    expect(counts).toMatchObject({ pending: audience.length - 7, queued: 1, sent: 4, failed: 1, skipped: { unsubscribed: 1 } });
    expect(await countLedger(repos, doc._id)).toEqual(counts);
  });

  it("takes delivery's outcomes from email.status in both forms: a batch's items and the one email's", async () => {
    const doc = await campaign({});
    await snapshotAudience(deps, repos, doc, clock + 60_000);
    const rows = audience.slice(0, 6);
    await handOver(repos.campaigns, doc._id, rowId(doc._id, rows.at(-1)!), rows.length);
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(topicsOf("campaigns"));
    const triggers = { handlers: {} } as unknown as TriggerWorker;
    const subscription = await subscribeCampaignEvents(bus, { logger: createLogger("ledger-test", "silent"), triggers, tenants: { forTenant: () => repos }, now: () => clock });
    try {
      const origin = () => ({ eventId: newId("evt"), tenant, occurredAt: clock });
      const item = (subscriberId: string, status: string, failureReason = delivery.FailureReason.UNSPECIFIED) => ({
        emailId: newId("eml"),
        subscriberId,
        campaignId: doc._id,
        status,
        failureReason,
      });
      const [a, b, c, d, e] = rows;
      await publishEvents(bus, [
        // A batch (delivery now): sent, failed, skipped; an email outside campaigns in it is passed over.
        encodeEvent("email.status", origin(), {
          outcomes: [item(a!, "sent"), item(b!, "failed", delivery.FailureReason.RECIPIENT_REJECTED), item(c!, "suppressed", delivery.FailureReason.RECIPIENT_UNSUBSCRIBED), { ...item(newId("sub"), "sent"), campaignId: "" }],
        }),
        // The one-email form (a delivery from before batches, a bounce).
        encodeEvent("email.status", origin(), item(d!, "sent")),
        encodeEvent("email.status", origin(), item(e!, "bounced", delivery.FailureReason.RECIPIENT_REJECTED)),
      ]);
      const counted = async () => (await repos.campaigns.findOne({ _id: doc._id }))!.counts!;
      const counts = await waitFor(async () => {
        const now = await counted();
        return now.queued === 1 ? now : undefined;
      }, "the outcomes recorded");
      expect(counts).toMatchObject({ pending: audience.length - 6, queued: 1, sent: 2, failed: 2, skipped: { unsubscribed: 1 } });
      expect(await countLedger(repos, doc._id)).toEqual(counts);
    } finally {
      await subscription.stop();
      await bus.close();
    }
  });

  it("erasure removes a subscriber's rows from every campaign; the counts keep them anonymously and add up, also after a crash mid-way", async () => {
    const doc = await campaign({});
    await snapshotAudience(deps, repos, doc, clock + 60_000);
    const other = await campaign({});
    await snapshotAudience(deps, repos, other, clock + 60_000);
    const [a, b, c, d] = audience;
    // a: sent in both; b: queued (in flight); c: pending; d: erased while a crash is mid-way.
    for (const id of [doc._id, other._id]) {
      await handOver(repos.campaigns, id, rowId(id, b!), 2);
      await recordOutcomes(repos, [{ campaignId: id, subscriberId: a!, status: "sent", failureReason: delivery.FailureReason.UNSPECIFIED }], clock);
    }
    const before = (await repos.campaigns.findOne({ _id: doc._id }))!.counts!;
    expect(before).toMatchObject({ total: 12, pending: 10, queued: 1, sent: 1 });

    for (const s of [a!, b!, c!]) expect(await eraseSubscriberRows(repos, s, clock)).toBe(2);
    // A crash after d's row was counted and before it was deleted: a recount takes it once.
    const row = (await repos.recipients.findOne({ _id: rowId(doc._id, d!) }))!;
    await moveRows(repos, doc._id, [row._id], "pending", "skipped.erased", clock);
    await repos.campaigns.updateOne({ _id: doc._id }, { $inc: { "erased_rows.skipped.erased": 1 }, $addToSet: { erasing: { $each: [row.email_id] } } } as never);
    expect(await countLedger(repos, doc._id)).toEqual((await repos.campaigns.findOne({ _id: doc._id }))!.counts);
    // The redelivered event finishes the job, and a repeat changes nothing.
    expect(await eraseSubscriberRows(repos, d!, clock)).toBe(2);
    expect(await eraseSubscriberRows(repos, d!, clock)).toBe(0);

    for (const id of [doc._id, other._id]) {
      const stored = (await repos.campaigns.findOne({ _id: id }))!;
      expect(stored.counts).toEqual({ total: 12, pending: 8, queued: 0, sent: 1, failed: 0, skipped: { unsubscribed: 0, erased: 3, suppressed: 0, cancelled: 0 } });
      expect(await reconcile(repos, id)).toEqual(stored.counts);
      expect(stored.erasing).toEqual([]);
      expect(JSON.stringify(stored)).not.toMatch(new RegExp([a, b, c, d].join("|")));
    }
    expect(await repos.recipients.count({ subscriber_id: { $in: [a!, b!, c!, d!] } })).toBe(0);
    expect(await repos.recipients.count({})).toBe(16);
  });

  it("exports a subscriber's campaign memberships and trigger fires (what became of each), nobody else's", async () => {
    const doc = await campaign({ name: "Autumn news" });
    await snapshotAudience(deps, repos, doc, clock + 60_000);
    const [a, b] = audience;
    await handOver(repos.campaigns, doc._id, rowId(doc._id, b!), 2);
    await recordOutcomes(repos, [{ campaignId: doc._id, subscriberId: a!, status: "failed", failureReason: delivery.FailureReason.RECIPIENT_REJECTED }], clock);
    const fire = { _id: `${newId("evt")}:trg_1`, trigger_id: "trg_1", event_id: "evt_1", subscriber_id: a!, template_id: "tpl_1", event_type: "subscriber.created" as const, reason: "", email_id: newId("eml"), due_at: clock, lease_until: 0, attempts: 1, created_at: clock, updated_at: clock };
    await repos.fires.insertMany([
      { ...fire, state: "sent" as const },
      { ...fire, _id: `${newId("evt")}:trg_2`, trigger_id: "trg_2", state: "pending" as const },
      { ...fire, _id: `${newId("evt")}:trg_3`, trigger_id: "trg_3", state: "skipped" as const, reason: "created_not_active", email_id: "" },
    ]);
    const scope = { ...repos, call: { tenant: { accountId: tenant.split(":")[0]!, mode: "test" as const }, actor: "api_key:k", requestId: "r" } };
    const part = JSON.parse(await exportSubscriberCampaigns(scope, a!));
    expect(part).toEqual({
      campaign_memberships: [{ campaign_id: doc._id, campaign_name: "Autumn news", state: "failed", reason: null, updated_at: new Date(clock).toISOString() }],
      // Every fire, with what became of it: the subscriber sees that a welcome was skipped, and why.
      trigger_sends: [
        { trigger_id: "trg_1", event_type: "subscriber.created", state: "sent", reason: null, fired_at: new Date(clock).toISOString() },
        { trigger_id: "trg_2", event_type: "subscriber.created", state: "pending", reason: null, fired_at: new Date(clock).toISOString() },
        { trigger_id: "trg_3", event_type: "subscriber.created", state: "skipped", reason: "created_not_active", fired_at: new Date(clock).toISOString() },
      ],
    });
    expect(JSON.stringify(part)).not.toContain(b!);
    expect(JSON.parse(await exportSubscriberCampaigns(scope, "sub_unknown"))).toEqual({ campaign_memberships: [], trigger_sends: [] });
  });

  it("a snapshot resume point on an erased subscriber moves to the row before; a complete snapshot keeps none", async () => {
    const done = await snapshotAudience(deps, repos, await campaign({}), clock + 60_000);
    expect(done!.snapshot_after).toBe("");
    const doc = await campaign({});
    // Stopped after the first page of 5.
    const first = await snapshotAudience(deps, repos, doc, clock - 1);
    expect(first!.snapshot_after).toBe(audience[4]);
    await eraseSubscriberRows(repos, audience[4]!, clock);
    expect((await repos.campaigns.findOne({ _id: doc._id }))!.snapshot_after).toBe(audience[3]);
    const finished = await snapshotAudience(deps, repos, (await repos.campaigns.findOne({ _id: doc._id }))!, clock + 60_000);
    expect(finished!.snapshot_complete).toBe(true);
    // The erased subscriber is in the fake audience still (the real one no longer lists them): taken again, once.
    expect(await reconcile(repos, doc._id)).toMatchObject({ total: 13, pending: 12, skipped: { erased: 1 } });
  });

  it("starts a scheduled campaign that is due, and fails one overdue by more than the allowed age", async () => {
    const due = await campaign({ status: "scheduled", send_at: clock - 30_000 });
    const started = await startDueCampaign(deps, repos, due);
    expect(started).toMatchObject({ status: "sending", template_version: 3, snapshot_complete: false });
    const missed = await campaign({ status: "scheduled", send_at: clock - 61_000 });
    expect(await startDueCampaign(deps, repos, missed)).toBeNull();
    expect(await repos.campaigns.findOne({ _id: missed._id })).toMatchObject({ status: "failed", failure_reason: "schedule_missed" });
    // Its change is in its outbox for campaign.status_changed.
    expect((await repos.campaigns.findOne({ _id: missed._id }))!.outbox).toEqual([expect.objectContaining({ status: "failed" })]);
  });
});
