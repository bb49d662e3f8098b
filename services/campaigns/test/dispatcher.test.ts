import { decodeEvent, InProcessEventBus, TOPICS, type EventBus, type EventMessage, type Subscription } from "@emailsvc/events";
import { newId } from "@emailsvc/ids";
import { createLogger } from "@emailsvc/telemetry";
import { openTestStore, STORE_KINDS, type TestStore } from "@emailsvc/testing";
import { emptyCounts } from "../src/domain/campaign.js";
import { CampaignDispatcher, RECIPIENTS_PER_EVENT } from "../src/messaging/dispatcher.js";
import type { CampaignDoc } from "../src/storage/documents.js";
import { CampaignStorage, type TenantRepositories } from "../src/storage/repositories.js";
import type { Deps } from "../src/usecases/deps.js";
import { handOver, rowId } from "../src/usecases/ledger.js";
import { recordOutcomes } from "../src/usecases/record-outcomes.js";
import { snapshotAudience } from "../src/usecases/snapshot-audience.js";

// The dispatcher finishes a campaign whose counts fell behind its ledger (a
// count update lost: an outcome's write that failed between the row and its
// count, or FerretDB losing one of two replicas' concurrent `$inc`) once the
// counts have not moved for a few seconds, not at its one-minute recheck of
// queued rows. The clock (frozen) is moved past the few seconds, well short of the minute.

/** A campaign as a send leaves it: sending, its snapshot not begun, no dispatcher holding it yet. */
function sendingCampaign(name: string, now: number) {
  return {
    _id: newId("cmp"),
    name,
    template_id: newId("tpl"),
    tag_filter: {},
    status: "sending" as const,
    created_at: now,
    updated_at: now,
    counts: emptyCounts(),
    snapshot_complete: false,
    snapshot_after: "",
    lease_until: 0,
    version: 1,
    outbox: [],
    outbox_pending: false,
  };
}

/** Delivery's side as a test sees it: each send request, decoded (a malformed one fails the test), with its key. */
function observeSendRequests(bus: EventBus, onRequest: (message: EventMessage<"email.send.requested">, key: string) => void | Promise<void>): Promise<Subscription> {
  return bus.subscribe({
    group: "test-delivery",
    topics: ["email.send.requested"],
    handler: async (event) => {
      const decoded = decodeEvent(event);
      if (!decoded.ok) throw new Error(decoded.problem);
      await onRequest(decoded.message as EventMessage<"email.send.requested">, event.key);
    },
  });
}

describe.each(STORE_KINDS)("campaign dispatcher (%s)", (kind) => {
  let test: TestStore;
  let storage: CampaignStorage;
  let repos: TenantRepositories;
  let bus: InProcessEventBus;
  let dispatcher: CampaignDispatcher | undefined;
  // The clock stands still but for offsetMs: on a slow machine (FerretDB under load) the setup may take
  // longer than the dispatcher's few seconds, which a real clock would count as stalled counts.
  let frozenAt = Date.now();
  let offsetMs = 0;
  const tenant = `${newId("acc")}:test`;
  const audience = Array.from({ length: 12 }, () => newId("sub")).sort();
  const deps: Deps = {
    audiences: {
      count: async () => audience.length,
      page: async (_call, _filter, after, limit) => {
        const ids = audience.filter((id) => id > after).slice(0, limit);
        return { ids, nextAfter: "" };
      },
    },
    templates: { exists: async () => true, currentVersion: async () => 3 },
    logger: createLogger("dispatcher-test", "silent"),
    now: () => frozenAt + offsetMs,
    settings: { rate: null, dailyLimit: null, scheduleMaxAgeMs: 60_000, maxInFlight: 100, snapshotBudgetMs: 10_000 },
  };

  beforeEach(async () => {
    frozenAt = Date.now();
    offsetMs = 0;
    test = await openTestStore(kind, "campaigns");
    storage = new CampaignStorage(test.store);
    await storage.createIndexes();
    repos = storage.forTenant(tenant);
    bus = new InProcessEventBus();
    await bus.ensureTopics(Object.keys(TOPICS));
  });
  afterEach(async () => {
    await dispatcher?.stop();
    await bus.close();
    await test.store.close();
    test.cleanup();
  });

  it("finishes a campaign whose counts still say queued while its ledger says sent, within seconds", async () => {
    const now = deps.now();
    const doc = sendingCampaign("Behind", now);
    await repos.campaigns.insertOne(doc);
    await snapshotAudience(deps, repos, { ...doc, tenant } as CampaignDoc, now + 60_000);
    // Every recipient handed to delivery: the run waits for their outcomes.
    expect(await handOver(repos.campaigns, doc._id, rowId(doc._id, audience.at(-1)!), audience.length)).not.toBeNull();
    dispatcher = new CampaignDispatcher(deps, storage.campaignsToDispatch(), storage.eventTenants(), bus, undefined, { owner: "test", intervalMs: 50 });
    dispatcher.start();
    const current = () => repos.campaigns.findOne({ _id: doc._id });
    for (let i = 0; i < 100 && (await current())?.lease_owner !== "test"; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await current())?.counts).toMatchObject({ queued: audience.length, sent: 0 });
    // The run recounts once right after taking the lease (a crash's repair): let that pass first, or the
    // ledger change below is what it finds and the campaign ends at once (failed so in CI under load).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await current())?.status).toBe("sending");

    // The outcomes reach the ledger's rows but not the counts.
    expect(await repos.recipients.updateMany({ campaign_id: doc._id, state: "pending" }, { $set: { state: "sent" } })).toBe(audience.length);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await current())?.status).toBe("sending");

    // Six seconds later by the clock, a minute being the queued rows' recheck.
    offsetMs = 6_000;
    let finished = await current();
    for (let i = 0; i < 100 && finished?.status !== "sent"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      finished = await current();
    }
    expect(finished?.status).toBe("sent");
    expect(finished?.counts).toMatchObject({ total: audience.length, pending: 0, queued: 0, sent: audience.length });
  });

  it("hands the first snapshot page over before the next is copied, and sends every recipient of a snapshot in pages once", async () => {
    const now = deps.now();
    const many = Array.from({ length: 14 }, () => newId("sub")).sort();
    const requested: Array<{ subscriberId: string; emailId: string }> = [];
    const seen = () => requested.length > 0;
    let pages = 0;
    // AudienceService answering 4 ids a page; every page past the first waits for the first send request:
    // a dispatcher that copied the whole snapshot before handing anything over would wait for ever.
    const paged: Deps = {
      ...deps,
      audiences: {
        count: async () => many.length,
        page: async (_call, _filter, after) => {
          pages++;
          for (let i = 0; after !== "" && !seen() && i < 1000; i++) await new Promise((resolve) => setTimeout(resolve, 10));
          if (after !== "" && !seen()) throw new Error("the second page was asked for before anything was handed over");
          const ids = many.filter((id) => id > after).slice(0, 4);
          return { ids, nextAfter: ids.length === 4 && ids.at(-1) !== many.at(-1) ? ids.at(-1)! : "" };
        },
      },
    };
    const doc = sendingCampaign("Paged", now);
    await repos.campaigns.insertOne(doc);
    // Delivery's part: every send request answered sent.
    const observer = await observeSendRequests(bus, async ({ recipients, campaignId }) => {
      requested.push(...recipients.map(({ subscriberId, emailId }) => ({ subscriberId, emailId })));
      await recordOutcomes(
        repos,
        recipients.map(({ subscriberId }) => ({ campaignId, subscriberId, status: "sent", failureReason: 0 })),
        deps.now(),
      );
    });
    try {
      dispatcher = new CampaignDispatcher(paged, storage.campaignsToDispatch(), storage.eventTenants(), bus, undefined, { owner: "test", intervalMs: 50 });
      dispatcher.start();
      let finished = await repos.campaigns.findOne({ _id: doc._id });
      for (let i = 0; i < 600 && finished?.status !== "sent"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        finished = await repos.campaigns.findOne({ _id: doc._id });
      }
      expect(finished?.status).toBe("sent");
      expect(finished?.snapshot_complete).toBe(true);
      expect(pages).toBe(4);
      expect(finished?.counts).toMatchObject({ total: many.length, pending: 0, queued: 0, sent: many.length, failed: 0 });
      expect(requested.map((r) => r.subscriberId).sort()).toEqual(many);
      expect(new Set(requested.map((r) => r.emailId)).size).toBe(many.length);
    } finally {
      await observer.stop();
    }
  });

  it("hands recipients over as events of up to RECIPIENTS_PER_EVENT each: the campaign and template once, keyed by the first email id", async () => {
    const now = deps.now();
    const many = Array.from({ length: 2 * RECIPIENTS_PER_EVENT + 50 }, () => newId("sub")).sort();
    const wide: Deps = {
      ...deps,
      audiences: { count: async () => many.length, page: async () => ({ ids: many, nextAfter: "" }) },
      settings: { ...deps.settings!, maxInFlight: 1000 },
    };
    const doc = { ...sendingCampaign("Batches", now), template_version: 3 };
    await repos.campaigns.insertOne(doc);
    const received: Array<{ key: string; message: EventMessage<"email.send.requested"> }> = [];
    const observer = await observeSendRequests(bus, (message, key) => void received.push({ key, message }));
    try {
      dispatcher = new CampaignDispatcher(wide, storage.campaignsToDispatch(), storage.eventTenants(), bus, undefined, { owner: "test", intervalMs: 50 });
      dispatcher.start();
      const total = () => received.reduce((sum, { message }) => sum + message.recipients.length, 0);
      for (let i = 0; i < 200 && total() < many.length; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      // In the order of their partitions: the batches' keys spread them.
      expect(received.map(({ message }) => message.recipients.length).sort()).toEqual([RECIPIENTS_PER_EVENT, RECIPIENTS_PER_EVENT, 50].sort());
      for (const { key, message } of received) {
        expect(message).toMatchObject({ campaignId: doc._id, templateId: doc.template_id, templateVersion: 3, emailId: "", subscriberId: "" });
        expect(key).toBe(message.recipients[0]!.emailId);
      }
      const recipients = received.flatMap(({ message }) => message.recipients);
      expect(recipients.map((r) => r.subscriberId).sort()).toEqual(many);
      const rows = await repos.recipients.find({ campaign_id: doc._id });
      expect(new Map(recipients.map((r) => [r.subscriberId, r.emailId]))).toEqual(new Map(rows.map((row) => [row.subscriber_id, row.email_id])));
      expect((await repos.campaigns.findOne({ _id: doc._id }))?.counts).toMatchObject({ pending: 0, queued: many.length });
    } finally {
      await observer.stop();
    }
  });

  it("hands over again, after a minute without an answer, what it handed over (no time is kept on the rows)", async () => {
    const now = deps.now();
    const doc = sendingCampaign("Unanswered", now);
    await repos.campaigns.insertOne(doc);
    const requests = new Map<string, number>();
    const total = () => [...requests.values()].reduce((sum, n) => sum + n, 0);
    const observer = await observeSendRequests(bus, ({ recipients }) => {
      for (const { emailId } of recipients) requests.set(emailId, (requests.get(emailId) ?? 0) + 1);
    });
    const wait = async (done: () => boolean | Promise<boolean>) => {
      for (let i = 0; i < 200 && !(await done()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    };
    try {
      dispatcher = new CampaignDispatcher(deps, storage.campaignsToDispatch(), storage.eventTenants(), bus, undefined, { owner: "test", intervalMs: 50 });
      dispatcher.start();
      await wait(() => total() === audience.length);
      expect(requests.size).toBe(audience.length);
      const stored = (await repos.campaigns.findOne({ _id: doc._id }))!;
      expect(stored.counts).toMatchObject({ pending: 0, queued: audience.length });
      expect(stored.handed_up_to).toBe(rowId(doc._id, audience.at(-1)!));
      // No answer: half a minute later nothing more; past the minute, every one once more.
      offsetMs = 30_000;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(total()).toBe(audience.length);
      offsetMs = 61_000;
      await wait(() => total() === 2 * audience.length);
      expect([...requests.values()]).toEqual(audience.map(() => 2));
      // Answered now: sent, once each.
      await recordOutcomes(
        repos,
        audience.map((subscriberId) => ({ campaignId: doc._id, subscriberId, status: "sent", failureReason: 0 })),
        deps.now(),
      );
      await wait(async () => (await repos.campaigns.findOne({ _id: doc._id }))?.status === "sent");
      const finished = (await repos.campaigns.findOne({ _id: doc._id }))!;
      expect(finished.status).toBe("sent");
      expect(finished.counts).toMatchObject({ total: audience.length, pending: 0, queued: 0, sent: audience.length });
      // A finished campaign keeps no position (it names a subscriber).
      expect(finished.handed_up_to).toBe("");
    } finally {
      await observer.stop();
    }
  });
});
