import { fromBinary } from "@bufbuild/protobuf";
import { KafkaEventBus } from "@emailsvc/events";
import { delivery, events } from "@emailsvc/proto";
import { newId } from "@emailsvc/ids";
import { as, smtpProviders, startHarness, tenant, waitFor, type Harness } from "./harness.js";
import { SmtpSink } from "@emailsvc/testing";

// One run on the production parts: Kafka (KAFKA_BROKERS, started by the Jest
// global setup when unset) and MongoDB (FerretDB), with a real SMTP relay.

const brokers = (process.env.KAFKA_BROKERS ?? "").split(",").map((b) => b.trim()).filter(Boolean);

if (brokers.length === 0) {
  if (process.env.CI) {
    test("KAFKA_BROKERS is set", () => {
      throw new Error("KAFKA_BROKERS is not set: the Kafka run of delivery cannot run in CI without a broker");
    });
  } else {
    test.skip("delivery on Kafka (set KAFKA_BROKERS to run it)", () => {});
  }
} else {
  describe("delivery on Kafka and MongoDB", () => {
    let h: Harness | undefined;
    let sink: SmtpSink | undefined;
    let bus: KafkaEventBus | undefined;
    beforeAll(async () => {
      sink = await new SmtpSink().start();
      bus = new KafkaEventBus({ brokers, clientId: "delivery-test", logger: () => {} });
      h = await startHarness({
        store: "mongodb",
        bus,
        providers: smtpProviders(sink.url()),
        from: "Acme <hello@acme.example>",
        // Its own group: other suites may run a delivery consumer on this Kafka at the same time.
        consumerGroup: `delivery-test-${newId("grp").slice(4)}`,
      });
    }, 90_000);
    afterAll(async () => {
      await h?.close();
      await bus?.close();
      await sink?.close();
    }, 60_000);

    it("queues, consumes the send request from Kafka, sends over SMTP, and publishes the status; events hold ids only", async () => {
      const live = tenant("live");
      const test = tenant("test");
      for (const t of [live, test]) h!.templates.put(t, { slug: "hello", subject: "Hello {{name}}", html: "<p>Hi {{name}}</p>" });
      const a = await h!.client.sendEmail({ templateSlug: "hello", to: "kafka.live@example.com", variables: { name: "Kay <3" }, idempotencyKey: "k1" }, as(live));
      const b = await h!.client.sendEmail({ templateSlug: "hello", to: "kafka.test@example.com", variables: { name: "Tess" } }, as(test));
      expect((await h!.client.sendEmail({ templateSlug: "hello", to: "kafka.live@example.com", variables: { name: "Kay <3" }, idempotencyKey: "k1" }, as(live))).replayed).toBe(true);

      for (const [id, t] of [[a.email!.id, live], [b.email!.id, test]] as const) {
        await waitFor(async () => ((await h!.client.getEmail({ id }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined), `sent ${id}`, 45_000);
      }
      const arrived = sink!.to("kafka.live@example.com");
      expect(arrived).toHaveLength(1);
      expect(arrived[0]!.parsed.subject).toBe("Hello Kay <3");
      expect(arrived[0]!.parsed.html).toContain("Hi Kay &lt;3");
      expect(arrived[0]!.parsed.messageId).toBe(`<${a.email!.id}@acme.example>`);
      expect(sink!.to("kafka.test@example.com")).toHaveLength(0);
      expect((await h!.client.getSandboxMessage({ emailId: b.email!.id }, as(test))).message!.subject).toBe("Hello Tess");

      const mine = await waitFor(() => {
        const list = h!.received.filter((e) => e.key === a.email!.id);
        return list.length >= 3 ? list : undefined;
      }, "events of the live email", 30_000);
      expect(mine.filter((e) => e.topic === "email.send.requested")).toHaveLength(1);
      expect(mine.filter((e) => e.topic === "email.status").map((e) => fromBinary(events.EmailStatusChangedSchema, e.value).status)).toEqual(["queued", "sent"]);
      for (const e of mine) expect(Buffer.from(e.value).toString("latin1")).not.toMatch(/kafka\.live|example\.com|Kay/);
    }, 90_000);
  });
}
