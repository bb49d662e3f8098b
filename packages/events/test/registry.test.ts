import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { events } from "@emailsvc/proto";
import {
  InProcessEventBus,
  TOPICS,
  encodeEvent,
  publishEvents,
  subscribeTopics,
  topicsProducedBy,
  type CheckedMeta,
  type EventMessage,
  type Topic,
} from "../src/index.js";

// The registry of topics: typed producing and consuming, and the one place
// where events are decoded and checked.

let counter = 0;
/** An id of our shape (`<prefix>_` + 26 Crockford base32 characters). */
function id(prefix: string): string {
  counter += 1;
  return `${prefix}_${counter.toString(32).padStart(26, "0")}`;
}

const account = id("acc");
const tenant = `${account}:live`;

/** Collects what a logger is told. */
function recordingLogger() {
  const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return { lines, error: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("event registry", () => {
  let bus: InProcessEventBus;
  beforeEach(async () => {
    bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(Object.keys(TOPICS));
  });
  afterEach(async () => {
    await bus.close();
  });

  it("publishes typed events and hands each consumer the decoded message with its checked meta", async () => {
    const emailId = id("eml");
    const subscriberId = id("sub");
    const sendEvent = id("evt");
    const deleteEvent = id("evt");
    const got: Array<{ topic: Topic; message: unknown; meta: CheckedMeta }> = [];
    const logger = recordingLogger();
    await subscribeTopics(bus, {
      group: "g",
      logger,
      handlers: {
        "email.send.requested": async (message, meta) => void got.push({ topic: meta.topic, message: message.emailId, meta }),
        "subscriber.deleted": async (message, meta) => void got.push({ topic: meta.topic, message: message.subscriberId, meta }),
      },
    });
    await publishEvents(bus, "email.send.requested", [
      { origin: { eventId: sendEvent, tenant, occurredAt: 1_700_000_000_123, headers: { traceparent: "00-abc-def-01" } }, body: { emailId } },
    ]);
    await publishEvents(bus, "subscriber.deleted", [{ origin: { eventId: deleteEvent, tenant: `${account}:test`, occurredAt: 5 }, body: { subscriberId } }]);
    await until(() => got.length === 2, "both events");

    const send = got.find((g) => g.topic === "email.send.requested")!;
    expect(send.message).toBe(emailId);
    expect(send.meta).toEqual({
      topic: "email.send.requested",
      eventId: sendEvent,
      accountId: account,
      mode: "live",
      tenant,
      occurredAt: 1_700_000_000_123,
      key: emailId,
      headers: { traceparent: "00-abc-def-01", "event-id": sendEvent, "event-type": "email.send.requested" },
    });
    const deleted = got.find((g) => g.topic === "subscriber.deleted")!;
    expect(deleted.message).toBe(subscriberId);
    expect(deleted.meta).toMatchObject({ mode: "test", tenant: `${account}:test`, key: subscriberId });
    expect(logger.lines).toEqual([]);
  });

  it("keys each event by the message's id and sets the headers in one place (ours win over a producer's)", () => {
    const emailId = id("eml");
    const eventId = id("evt");
    const event = encodeEvent("email.status", { eventId, tenant, occurredAt: 1, headers: { "event-id": "forged", x: "y" } }, { emailId, status: "sent" });
    expect(event.key).toBe(emailId);
    expect(event.headers).toEqual({ x: "y", "event-id": eventId, "event-type": "email.status" });
    expect(() => encodeEvent("email.status", { eventId, tenant, occurredAt: 1 }, { emailId: "someone@example.com", status: "sent" })).toThrow(
      "email.status: the key must be a eml_ id",
    );
  });

  it("skips malformed and undecodable events, logging ids only, and goes on with the next", async () => {
    const logger = recordingLogger();
    const handled: string[] = [];
    await subscribeTopics(bus, {
      group: "g",
      logger,
      handlers: { "email.send.requested": async (message: EventMessage<"email.send.requested">) => void handled.push(message.emailId) },
    });
    const emailId = id("eml");
    const meta = (fields: Partial<{ eventId: string; accountId: string; mode: string }>) =>
      create(events.EventMetaSchema, { eventId: id("evt"), accountId: account, mode: "live", occurredAt: timestampFromMs(1), ...fields });
    const raw = (key: string, message: Parameters<typeof toBinary<typeof events.EmailSendRequestedSchema>>[1]) => ({
      key,
      value: toBinary(events.EmailSendRequestedSchema, message),
      headers: { "event-id": "evt_secret@example.com", "event-type": "email.send.requested" },
    });
    const goodEvent = id("evt");
    await bus.publish("email.send.requested", [
      // Not protobuf at all (a truncated varint), and a key that is personal data.
      { key: "ada@example.com", value: new Uint8Array([0x0a, 0xff]), headers: {} },
      raw(emailId, create(events.EmailSendRequestedSchema, { emailId })),
      raw(emailId, create(events.EmailSendRequestedSchema, { emailId, meta: meta({ mode: "staging" }) })),
      raw(emailId, create(events.EmailSendRequestedSchema, { emailId, meta: meta({ accountId: "acc_x" }) })),
      raw(emailId, create(events.EmailSendRequestedSchema, { emailId, meta: meta({ eventId: "" }) })),
      raw(emailId, create(events.EmailSendRequestedSchema, { emailId: "ada@example.com", meta: meta({}) })),
      raw(id("eml"), create(events.EmailSendRequestedSchema, { emailId, meta: meta({}) })),
      { ...raw(emailId, create(events.EmailSendRequestedSchema, { emailId, meta: meta({}) })), headers: { "event-id": goodEvent } },
    ]);
    await until(() => handled.length === 1, "the one good event");
    expect(handled).toEqual([emailId]);
    // Events of other keys sit in other partitions: their order is not the publish order.
    await until(() => logger.lines.length === 7, "every malformed event reported");
    expect(logger.lines.map((line) => [line.message, line.fields.problem]).sort()).toEqual([
      ["malformed event skipped", "mode is neither live nor test"],
      ["malformed event skipped", "no meta"],
      ["malformed event skipped", "no valid account id"],
      ["malformed event skipped", "no valid eml_ id"],
      ["malformed event skipped", "no valid event id"],
      ["malformed event skipped", "not a message of its topic"],
      ["malformed event skipped", "the bus key differs from the message's id"],
    ]);
    // Ids only: the key when it is an id, never an address, a header that is no id, or bytes.
    const logged = JSON.stringify(logger.lines);
    expect(logged).not.toContain("example.com");
    const fieldsOf = (problem: string) => logger.lines.find((line) => line.fields.problem === problem)!.fields;
    expect(fieldsOf("not a message of its topic")).toEqual({ topic: "email.send.requested", problem: "not a message of its topic" });
    expect(fieldsOf("no meta")).toEqual({ topic: "email.send.requested", problem: "no meta", key: emailId });
  });

  it("names the producer of every topic", () => {
    expect(topicsProducedBy("delivery").sort()).toEqual(["email.send.requested", "email.status"]);
    expect(topicsProducedBy("subscribers")).toHaveLength(5);
  });
});

// Compile-time checks (tsc over the tests): bodies and handlers are typed by the topic.
export function typedOnly(bus: InProcessEventBus): void {
  const origin = { eventId: id("evt"), tenant, occurredAt: 0 };
  // @ts-expect-error a field email.send.requested does not have
  void publishEvents(bus, "email.send.requested", [{ origin, body: { subscriberId: "sub_x" } }]);
  // @ts-expect-error a topic the registry does not know
  void publishEvents(bus, "email.sent", [{ origin, body: {} }]);
  void subscribeTopics(bus, {
    group: "g",
    logger: recordingLogger(),
    handlers: {
      // @ts-expect-error the message of subscriber.deleted has no emailId
      "subscriber.deleted": async (message) => void message.emailId,
    },
  });
}
