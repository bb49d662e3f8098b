import { create, toBinary } from "@bufbuild/protobuf";
import { events } from "@emailsvc/proto";
import { newId } from "@emailsvc/ids";
import {
  InProcessEventBus,
  TOPICS,
  decodeEvent,
  emailOutcomeId,
  emailOutcomesOf,
  encodeEvent,
  publishEvents,
  subscribeEventBatches,
  subscribeEvents,
  type EventBus,
  type EventMessage,
  type OutgoingEvent,
  type ReceivedMeta,
} from "../src/index.js";

const tenant = () => `${newId("acc")}:live`;

describe("the topic registry", () => {
  it("encodes an event with its meta, keyed by the topic's id, with event-id and event-type headers", () => {
    const origin = { eventId: newId("evt"), tenant: tenant(), occurredAt: 1_700_000_000_123 };
    const emailId = newId("eml");
    const { topic, event } = encodeEvent("email.status", origin, { emailId, status: "sent" });
    expect(topic).toBe("email.status");
    expect(event.key).toBe(emailId);
    expect(event.headers).toEqual({ "event-id": origin.eventId, "event-type": "email.status" });
    const decoded = decodeEvent({ topic, key: event.key, value: event.value, headers: event.headers! });
    if (!decoded.ok) throw new Error(decoded.problem);
    expect((decoded.message as EventMessage<"email.status">).status).toBe("sent");
    expect(decoded.meta).toEqual({
      topic: "email.status",
      key: emailId,
      eventId: origin.eventId,
      accountId: origin.tenant.split(":")[0],
      mode: "live",
      tenant: origin.tenant,
      occurredAt: origin.occurredAt,
      headers: event.headers,
    });
  });

  it("types the body by the topic", () => {
    const origin = { eventId: newId("evt"), tenant: tenant(), occurredAt: 0 };
    // Compiled by `npm test`'s type check, never run.
    const typeErrors = () => {
      // @ts-expect-error subscriber.created has no emailId
      encodeEvent("subscriber.created", origin, { emailId: "eml_x" });
      // @ts-expect-error no such topic
      encodeEvent("email.nope", origin, {});
      // @ts-expect-error status is a string
      encodeEvent("email.status", origin, { emailId: "eml_x", status: 3 });
    };
    void typeErrors;
    expect(() => encodeEvent("email.nope" as "email.status", origin, { emailId: newId("eml") })).toThrow(/unknown topic email.nope/);
    expect(encodeEvent("subscriber.created", origin, { subscriberId: newId("sub"), tagIds: ["tag_a"] }).event.key).toMatch(/^sub_/);
    // A campaign's lone recipient (the form before batches) is keyed by subscriber, an email delivery stored by its id.
    const emailId = newId("eml");
    const subscriberId = newId("sub");
    expect(encodeEvent("email.send.requested", origin, { emailId }).event.key).toBe(emailId);
    expect(encodeEvent("email.send.requested", origin, { emailId, campaignId: newId("cmp"), subscriberId, templateId: newId("tpl"), templateVersion: 1 }).event.key).toBe(subscriberId);
    // A campaign's batch, by its first recipient's email id; a batch whose first id is no email id is malformed.
    const batch = { campaignId: newId("cmp"), templateId: newId("tpl"), templateVersion: 1 };
    const recipients = [
      { emailId, subscriberId },
      { emailId: newId("eml"), subscriberId: newId("sub") },
    ];
    const { event } = encodeEvent("email.send.requested", origin, { ...batch, recipients });
    expect(event.key).toBe(emailId);
    const decoded = decodeEvent({ topic: "email.send.requested", key: event.key, value: event.value, headers: event.headers! });
    expect(decoded.ok && (decoded.message as { recipients: unknown[] }).recipients).toEqual(recipients.map((r) => expect.objectContaining(r)));
    const wrong = encodeEvent("email.send.requested", origin, { ...batch, recipients: [{ emailId: subscriberId, subscriberId }] }).event;
    expect(decodeEvent({ topic: "email.send.requested", key: wrong.key, value: wrong.value, headers: wrong.headers! })).toEqual({ ok: false, problem: "malformed" });
 
  });

  it("keys a batch of outcomes on email.status by its first email id, and reads both forms as outcomes with ids of their own", () => {
    const origin = { eventId: newId("evt"), tenant: tenant(), occurredAt: 1_795_773_416_096 };
    const campaignId = newId("cmp");
    const outcomes = [
      { emailId: newId("eml"), status: "sent", subscriberId: newId("sub"), campaignId, afterMs: 0 },
      { emailId: newId("eml"), status: "suppressed", subscriberId: newId("sub"), campaignId, reason: "recipient_unsubscribed", failureReason: 8, afterMs: 40 },
    ];
    const { event } = encodeEvent("email.status", origin, { outcomes });
    expect(event.key).toBe(outcomes[0]!.emailId);
    const decoded = decodeEvent({ topic: "email.status", key: event.key, value: event.value, headers: event.headers! });
    if (!decoded.ok) throw new Error(decoded.problem);
    const message = decoded.message as EventMessage<"email.status">;
    expect(emailOutcomesOf(message)).toEqual(outcomes.map((o) => expect.objectContaining(o)));
    expect(emailOutcomesOf(message).map((o) => emailOutcomeId(message, origin.eventId, o))).toEqual(outcomes.map((o) => `${origin.eventId}/${o.emailId}`));
    // The one-email form: its own fields as the one outcome, the event id as its id.
    const one = { emailId: newId("eml"), status: "bounced", subscriberId: newId("sub"), campaignId: "", reason: "recipient_rejected", failureReason: 3, bounceType: "hard" };
    const single = encodeEvent("email.status", origin, one).event;
    expect(single.key).toBe(one.emailId);
    const alone = decodeEvent({ topic: "email.status", key: single.key, value: single.value, headers: single.headers! });
    if (!alone.ok) throw new Error(alone.problem);
    const aloneMessage = alone.message as EventMessage<"email.status">;
    expect(emailOutcomesOf(aloneMessage)).toEqual([{ ...one, afterMs: 0 }]);
    expect(emailOutcomeId(aloneMessage, origin.eventId, emailOutcomesOf(aloneMessage)[0]!)).toBe(origin.eventId);
    // A batch whose first id is no email id is malformed, as is an event with neither form's id.
    const wrong = encodeEvent("email.status", origin, { outcomes: [{ ...outcomes[0]!, emailId: campaignId }, outcomes[1]!] }).event;
    expect(decodeEvent({ topic: "email.status", key: wrong.key, value: wrong.value, headers: wrong.headers! })).toEqual({ ok: false, problem: "malformed" });
    const empty = encodeEvent("email.status", origin, { status: "sent" }).event;
    expect(decodeEvent({ topic: "email.status", key: empty.key, value: empty.value, headers: empty.headers! })).toEqual({ ok: false, problem: "malformed" });
  });

  it("refuses what does not decode, lacks a well-formed meta, or is keyed by another kind of id", () => {
    const good = (over: Partial<{ eventId: string; accountId: string; mode: string }>, emailId = newId("eml")) => {
      const meta = create(events.EventMetaSchema, { eventId: newId("evt"), accountId: newId("acc"), mode: "test", ...over });
      return toBinary(events.EmailSendRequestedSchema, create(events.EmailSendRequestedSchema, { meta, emailId }));
    };
    const check = (value: Uint8Array, topic = "email.send.requested") => {
      const decoded = decodeEvent({ topic, key: "k", value, headers: {} });
      return decoded.ok ? "ok" : decoded.problem;
    };
    expect(check(good({}))).toBe("ok");
    expect(check(Uint8Array.from([0xff, 0xff, 0xff]))).toBe("undecodable");
    expect(check(good({ accountId: "acc_short" }))).toBe("malformed");
    expect(check(good({ mode: "prod" }))).toBe("malformed");
    expect(check(good({ eventId: "" }))).toBe("malformed");
    expect(check(good({}, newId("sub")))).toBe("malformed");
    // A campaign's recipient must be keyed by a subscriber id.
    const campaignRequest = (subscriberId: string) =>
      toBinary(
        events.EmailSendRequestedSchema,
        create(events.EmailSendRequestedSchema, {
          meta: { eventId: newId("evt"), accountId: newId("acc"), mode: "live" },
          emailId: newId("eml"),
          campaignId: newId("cmp"),
          subscriberId,
        }),
      );
    expect(check(campaignRequest(newId("sub")))).toBe("ok");
    expect(check(campaignRequest(newId("eml")))).toBe("malformed");
    expect(check(toBinary(events.EmailSendRequestedSchema, create(events.EmailSendRequestedSchema, { emailId: newId("eml") })))).toBe("malformed");
    expect(check(good({}), "no.such.topic")).toBe("unknown topic");
  });

  it("publishes one batch per topic, in the order asked", async () => {
    const calls: Array<[string, OutgoingEvent[]]> = [];
    const bus = { publish: async (topic: string, list: OutgoingEvent[]) => void calls.push([topic, list]) } as unknown as EventBus;
    const origin = () => ({ eventId: newId("evt"), tenant: tenant(), occurredAt: 0 });
    const emailId = newId("eml");
    await publishEvents(
      bus,
      [
        encodeEvent("email.status", origin(), { emailId, status: "queued" }),
        encodeEvent("email.send.requested", origin(), { emailId }),
        encodeEvent("email.status", origin(), { emailId, status: "sent" }),
      ],
      ["email.send.requested"],
    );
    expect(calls.map(([topic, list]) => [topic, list.length])).toEqual([
      ["email.send.requested", 1],
      ["email.status", 2],
    ]);
  });

  it("subscribes with a handler per topic; malformed events are logged by ids only and skipped, the next ones still arrive", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    const topics = Object.keys(TOPICS);
    await bus.ensureTopics(topics);
    const logged: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const got: Array<{ id: string; meta: ReceivedMeta }> = [];
    const deleted: string[] = [];
    const subscription = await subscribeEvents(bus, {
      group: "registry-test",
      logger: { error: (fields, message) => logged.push({ fields, message }) },
      handlers: {
        "email.send.requested": async (message, meta) => {
          got.push({ id: message.emailId, meta });
        },
        "subscriber.deleted": async (message) => {
          deleted.push(message.subscriberId);
        },
      },
    });
    try {
      const emailId = newId("eml");
      const t = tenant();
      // Same key, so order is kept: both bad events come before the good one.
      await bus.publish("email.send.requested", [
        { key: emailId, value: Uint8Array.from([0xff, 0xff]), headers: { "event-id": "evt_bad" } },
        { key: emailId, value: toBinary(events.EmailSendRequestedSchema, create(events.EmailSendRequestedSchema, { emailId })) },
      ]);
      await publishEvents(bus, [encodeEvent("email.send.requested", { eventId: "evt_good", tenant: t, occurredAt: 5 }, { emailId })]);
      const subscriberId = newId("sub");
      await publishEvents(bus, [encodeEvent("subscriber.deleted", { eventId: newId("evt"), tenant: t, occurredAt: 5 }, { subscriberId })]);
      await until(() => got.length === 1 && deleted.length === 1);
      expect(got[0]!.id).toBe(emailId);
      expect(got[0]!.meta.tenant).toBe(t);
      expect(got[0]!.meta.eventId).toBe("evt_good");
      expect(deleted).toEqual([subscriberId]);
      expect(logged).toEqual([
        { fields: { topic: "email.send.requested", key: emailId, event_id: "evt_bad" }, message: "undecodable event skipped" },
        { fields: { topic: "email.send.requested", key: emailId, event_id: "" }, message: "malformed event skipped" },
      ]);
    } finally {
      await subscription.stop();
      await bus.close();
    }
  });

  it("subscribes a batch handler per topic: decoded events in batches of one topic, malformed ones skipped", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(["email.send.requested", "subscriber.deleted"]);
    const logged: string[] = [];
    const deleted: string[] = [];
    const t = tenant();
    const emailId = newId("eml");
    // Published before the subscription, one key: the first batch finds them all waiting.
    await bus.publish("email.send.requested", [{ key: emailId, value: Uint8Array.from([0xff]), headers: { "event-id": "evt_bad" } }]);
    await publishEvents(
      bus,
      Array.from({ length: 7 }, (_, i) => encodeEvent("email.send.requested", { eventId: `evt_${i}`, tenant: t, occurredAt: i }, { emailId })),
    );
    const batches: Array<Array<{ emailId: string; eventId: string; tenant: string }>> = [];
    const subscription = await subscribeEventBatches(bus, {
      group: "registry-batch-test",
      maxBatch: 3,
      logger: { error: (_fields, message) => logged.push(message) },
      handlers: {
        "email.send.requested": async (batch) => {
          batches.push(batch.map(({ message, meta }) => ({ emailId: message.emailId, eventId: meta.eventId, tenant: meta.tenant })));
        },
        "subscriber.deleted": async (batch) => {
          deleted.push(...batch.map(({ message }) => message.subscriberId));
        },
      },
    });
    try {
      const subscriberId = newId("sub");
      await publishEvents(bus, [encodeEvent("subscriber.deleted", { eventId: newId("evt"), tenant: t, occurredAt: 1 }, { subscriberId })]);
      await until(() => batches.flat().length === 7 && deleted.length === 1);
      expect(deleted).toEqual([subscriberId]);
      expect(batches.flat().map((e) => e.eventId)).toEqual(["evt_0", "evt_1", "evt_2", "evt_3", "evt_4", "evt_5", "evt_6"]);
      expect(batches.flat().every((e) => e.emailId === emailId && e.tenant === t)).toBe(true);
      expect(batches.every((b) => b.length >= 1 && b.length <= 3)).toBe(true);
      expect(batches.some((b) => b.length > 1)).toBe(true);
      expect(logged).toEqual(["undecodable event skipped"]);
    } finally {
      await subscription.stop();
      await bus.close();
    }
  });

  it("passes over, undecoded, the events of tenants a batch subscription does not want, asking once per batch", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(["email.status"]);
    const wanted = tenant();
    const other = tenant();
    const emailId = newId("eml");
    const status = (t: string, i: number) => encodeEvent("email.status", { eventId: `evt_${i}`, tenant: t, occurredAt: i }, { emailId, status: "sent" });
    // One key, so one partition and one order: the other tenant's events, a malformed one of the other
    // tenant (an email id that is no id: decoding would log it), and the wanted tenant's.
    const otherMeta = { eventId: "evt_odd", accountId: other.split(":")[0], mode: "live" };
    const malformed = toBinary(events.EmailStatusChangedSchema, create(events.EmailStatusChangedSchema, { meta: otherMeta, emailId: "not an id", status: "sent" }));
    await publishEvents(bus, [status(other, 0), status(wanted, 1), status(other, 2)]);
    await bus.publish("email.status", [{ key: emailId, value: malformed, headers: { "event-id": "evt_odd" } }]);
    // Bytes whose tenant cannot be read are decoded, and skipped as ever.
    await bus.publish("email.status", [{ key: emailId, value: Uint8Array.from([0xff]), headers: { "event-id": "evt_bad" } }]);
    await publishEvents(bus, [status(wanted, 3), status(other, 4)]);
    const asked: string[][] = [];
    const got: string[] = [];
    const logged: string[] = [];
    const subscription = await subscribeEventBatches(bus, {
      group: "registry-tenants-test",
      maxBatch: 100,
      logger: { error: (_fields, message) => logged.push(message) },
      tenants: async (topic, tenants) => {
        expect(topic).toBe("email.status");
        asked.push([...tenants].sort());
        return new Set(tenants.filter((t) => t === wanted));
      },
      handlers: {
        "email.status": async (batch) => {
          got.push(...batch.map(({ meta }) => `${meta.tenant} ${meta.eventId}`));
        },
      },
    });
    try {
      await until(() => got.length === 2 && logged.length === 1);
      expect(got).toEqual([`${wanted} evt_1`, `${wanted} evt_3`]);
      // The malformed event of the passed-over tenant was never decoded, so never logged; the unreadable one was.
      expect(logged).toEqual(["undecodable event skipped"]);
      // Each batch asked once, with its distinct tenants.
      expect(asked.length).toBeGreaterThanOrEqual(1);
      for (const tenants of asked) expect(new Set(tenants).size).toBe(tenants.length);
      expect(new Set(asked.flat())).toEqual(new Set([wanted, other]));
    } finally {
      await subscription.stop();
      await bus.close();
    }
  });
});

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}
