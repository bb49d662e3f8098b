import { newId } from "@emailsvc/ids";
import { createLogger } from "@emailsvc/telemetry";
import { openTestStore, STORE_KINDS, type TestStore } from "@emailsvc/testing";
import { PermanentSendError, type FiringServices } from "../src/usecases/ports.js";
import { CampaignStorage, type TenantRepositories } from "../src/storage/repositories.js";
import type { DecodedBatchEvent } from "@emailsvc/events";
import { delivery, SubscriberStatus, TRIGGER_EVENT_TYPE_NAMES, TRIGGER_EVENT_TYPES } from "@emailsvc/proto";
import { TriggerWorker, type TriggerSourceTopic } from "../src/messaging/triggers.js";
import { fireDue } from "../src/usecases/fire-due.js";
import type { FiringDeps, SubscriberEvent } from "../src/usecases/fires.js";
import { recordFires } from "../src/usecases/record-fires.js";

// Recording and sending fires on both stores, with the other services faked
// (what they answer is the input here; the platform tests use the real ones).

class FakeFiring implements FiringServices {
  readonly sent: Array<{ to: string; key: string }> = [];
  failNext: Error | undefined;
  /** Delivery refuses the next recipient with this reason's code. */
  refuseNext: delivery.FailureReason | undefined;
  async subscriber(_call: unknown, id: string) {
    return id === "sub_gone" ? undefined : { email: `${id}@example.com` };
  }
  async tagName(_call: unknown, id: string) {
    return id === "tag_vip" ? "VIP" : "other";
  }
  async templateSlug() {
    return "welcome";
  }
  async send(_call: unknown, input: { to: string; idempotencyKey: string }) {
    if (this.failNext) {
      const error = this.failNext;
      this.failNext = undefined;
      throw error;
    }
    const refused = this.refuseNext;
    this.refuseNext = undefined;
    if (!refused) this.sent.push({ to: input.to, key: input.idempotencyKey });
    return { emailId: newId("eml"), refused };
  }
}

describe.each(STORE_KINDS)("trigger fires (%s)", (kind) => {
  let test: TestStore;
  let storage: CampaignStorage;
  let repos: TenantRepositories;
  let firing: FakeFiring;
  let clock: number;
  let deps: FiringDeps;
  const tenant = `${newId("acc")}:test`;

  beforeEach(async () => {
    test = await openTestStore(kind, "campaigns");
    storage = new CampaignStorage(test.store);
    await storage.createIndexes();
    repos = storage.forTenant(tenant);
    firing = new FakeFiring();
    clock = Date.now();
    deps = { firing, logger: createLogger("fires-test", "silent"), now: () => clock };
  });
  afterEach(async () => {
    await test.store.close();
    test.cleanup();
  });

  const trigger = async (fields: { event_type: SubscriberEvent["type"]; tag?: string; delay_seconds?: number; is_active?: boolean }) => {
    const doc = { _id: newId("trg"), template_id: newId("tpl"), description: "", is_active: true, delay_seconds: 0, tag: "", created_at: clock, updated_at: clock, ...fields };
    await repos.triggers.insertOne(doc);
    return doc._id;
  };
  const event = (type: SubscriberEvent["type"], subscriberId = newId("sub"), tagId?: string, status?: SubscriberStatus): SubscriberEvent => ({
    tenant,
    eventId: newId("evt"),
    type,
    subscriberId,
    ...(tagId ? { tagId } : {}),
    ...(status !== undefined ? { status } : {}),
    occurredAt: clock,
  });
  const fireAll = () => fireDue(deps, storage.dueFires(), (t) => storage.forTenant(t));

  it("records one fire per event and active trigger, once however often the event comes", async () => {
    await trigger({ event_type: "subscriber.created" });
    await trigger({ event_type: "subscriber.created" });
    await trigger({ event_type: "subscriber.created", is_active: false });
    await trigger({ event_type: "subscriber.tag_added" });
    const created = event("subscriber.created");
    expect(await recordFires(deps, repos, [created])).toBe(2);
    expect(await recordFires(deps, repos, [created, created])).toBe(0);
    await fireAll();
    await fireAll();
    expect(firing.sent).toHaveLength(2);
    expect(new Set(firing.sent.map((s) => s.key)).size).toBe(2);
    expect(firing.sent.every((s) => s.key.startsWith(`trigger-fire:${created.eventId}:trg_`))).toBe(true);
    expect(await repos.fires.count({ state: "sent" })).toBe(2);
  });

  it("fires a trigger of every type of the one list from an event of its topic (a type added without its reader fails here)", async () => {
    // One event of each topic as the subscribers service publishes it, made to be each type of it.
    const messages: { [T in TriggerSourceTopic]: Record<string, unknown> } = {
      "subscriber.created": {},
      "subscriber.tag_added": { tagId: "tag_vip" },
      "subscriber.tag_removed": { tagId: "tag_vip" },
      "subscriber.status_changed": { fromStatus: "active", toStatus: "unsubscribed" },
    };
    const worker = new TriggerWorker(storage.eventTenants(), storage.dueFires(), deps);
    for (const type of TRIGGER_EVENT_TYPE_NAMES) {
      const id = await trigger({ event_type: type });
      const topic = TRIGGER_EVENT_TYPES[type].topic;
      const event = { message: { subscriberId: newId("sub"), ...messages[topic] }, meta: { tenant, eventId: newId("evt"), occurredAt: clock } };
      await worker.handlers[topic]!([event as unknown as DecodedBatchEvent<typeof topic>]);
      expect((await repos.fires.find({ trigger_id: id })).map((f) => f.event_type)).toEqual([type]);
    }
    await worker.stop();
  });

  it("fires a tag trigger for its tag only, and another tenant's triggers never", async () => {
    await trigger({ event_type: "subscriber.tag_added", tag: "vip" });
    await storage.forTenant(`${newId("acc")}:test`).triggers.insertOne({
      _id: newId("trg"), template_id: newId("tpl"), description: "", is_active: true, delay_seconds: 0, tag: "", event_type: "subscriber.tag_added", created_at: clock, updated_at: clock,
    });
    expect(await recordFires(deps, repos, [event("subscriber.tag_added", newId("sub"), "tag_other")])).toBe(0);
    expect(await recordFires(deps, repos, [event("subscriber.tag_added", newId("sub"), "tag_vip")])).toBe(1);
  });

  it("waits for the delay, skips a deleted subscriber or a disabled trigger, and keeps a fire through an outage", async () => {
    const delayed = await trigger({ event_type: "subscriber.created", delay_seconds: 60 });
    await recordFires(deps, repos, [event("subscriber.created")]);
    await fireAll();
    expect(firing.sent).toHaveLength(0);
    clock += 61_000;
    firing.failNext = new Error("delivery unreachable");
    await fireAll();
    expect(firing.sent).toHaveLength(0);
    expect(await repos.fires.count({ state: "pending" })).toBe(1); // retried later
    clock += 120_000;
    await fireAll();
    expect(firing.sent).toHaveLength(1);

    await recordFires(deps, repos, [event("subscriber.created", "sub_gone")]);
    await repos.triggers.updateOne({ _id: delayed }, { $set: { is_active: false } });
    await recordFires(deps, repos, [event("subscriber.created")]); // inactive now: no fire
    clock += 61_000;
    await fireAll();
    expect(firing.sent).toHaveLength(1);
    expect((await repos.fires.find({ state: "skipped" })).map((f) => f.reason)).toEqual(["trigger_inactive"]);
  });

  it("drops the fire of a subscriber erased before it was sent (no trace of them stays), and records the event type", async () => {
    await trigger({ event_type: "subscriber.created" });
    await recordFires(deps, repos, [event("subscriber.created", "sub_gone"), event("subscriber.created")]);
    expect((await repos.fires.find({})).map((f) => f.event_type)).toEqual(["subscriber.created", "subscriber.created"]);
    await fireAll();
    expect(firing.sent).toHaveLength(1);
    expect(await repos.fires.count({ subscriber_id: "sub_gone" })).toBe(0);
    expect(await repos.fires.count({ state: "sent" })).toBe(1);
  });

  it("counts the delay from the event, not from when the consumer got to it", async () => {
    await trigger({ event_type: "subscriber.created", delay_seconds: 60 });
    const late = { ...event("subscriber.created"), occurredAt: clock - 50_000 };
    await recordFires(deps, repos, [late]);
    const [fire] = await repos.fires.find({});
    expect(fire!.due_at).toBe(clock + 10_000);
    clock += 10_001;
    await fireAll();
    expect(firing.sent).toHaveLength(1);
  });

  it("records a fire delivery refused the recipient (may not get the template's category) as skipped with its reason, and does not retry it", async () => {
    await trigger({ event_type: "subscriber.unsubscribed" });
    await recordFires(deps, repos, [event("subscriber.unsubscribed")]);
    firing.refuseNext = delivery.FailureReason.RECIPIENT_UNSUBSCRIBED;
    await fireAll();
    expect((await repos.fires.find({})).map((f) => [f.state, f.reason, f.email_id.startsWith("eml_")])).toEqual([["skipped", "recipient_unsubscribed", true]]);
    clock += 120_000;
    await fireAll();
    expect(firing.sent).toHaveLength(0);
  });

  it("does not welcome a subscriber created other than active: the fire is recorded skipped, nothing is sent", async () => {
    await trigger({ event_type: "subscriber.created" });
    await recordFires(deps, repos, [event("subscriber.created", newId("sub"), undefined, SubscriberStatus.UNSUBSCRIBED), event("subscriber.created", newId("sub"), undefined, SubscriberStatus.ACTIVE)]);
    // Events written before the status was carried fire as before (delivery still decides who may be mailed).
    await recordFires(deps, repos, [event("subscriber.created", newId("sub"), undefined, SubscriberStatus.UNSPECIFIED)]);
    await fireAll();
    expect((await repos.fires.find({})).map((f) => [f.state, f.reason]).sort()).toEqual([
      ["sent", ""],
      ["sent", ""],
      ["skipped", "created_not_active"],
    ]);
    expect(firing.sent).toHaveLength(2);
  });

  it("does not welcome a subscriber a bulk import created unless the import asked for its triggers", async () => {
    await trigger({ event_type: "subscriber.created" });
    const imported = (runsTriggers: boolean): SubscriberEvent => ({ ...event("subscriber.created", newId("sub"), undefined, SubscriberStatus.ACTIVE), importId: newId("imp"), importRunsTriggers: runsTriggers });
    await recordFires(deps, repos, [imported(false), imported(true)]);
    await fireAll();
    expect((await repos.fires.find({})).map((f) => [f.state, f.reason]).sort()).toEqual([
      ["sent", ""],
      ["skipped", "imported"],
    ]);
    expect(firing.sent).toHaveLength(1);
  });

  it("fails a fire delivery refuses for good, with its code", async () => {
    await trigger({ event_type: "subscriber.unsubscribed" });
    await recordFires(deps, repos, [event("subscriber.unsubscribed")]);
    firing.failNext = new PermanentSendError("template_not_found");
    await fireAll();
    expect((await repos.fires.find({})).map((f) => [f.state, f.reason])).toEqual([["failed", "template_not_found"]]);
  });
});
