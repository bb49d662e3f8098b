import { KafkaEventBus, NamespacedEventBus } from "@emailsvc/events";
import { newId } from "@emailsvc/ids";
import { Webhook } from "standardwebhooks";
import { as, startHarness, tenant, waitFor, type Harness } from "./harness.js";

// The webhooks service on the production parts: Kafka (KAFKA_BROKERS, started
// by the Jest global setup when unset) and MongoDB (FerretDB).

const brokers = (process.env.KAFKA_BROKERS ?? "").split(",").map((b) => b.trim()).filter(Boolean);

if (brokers.length === 0) {
  if (process.env.CI) {
    test("KAFKA_BROKERS is set", () => {
      throw new Error("KAFKA_BROKERS is not set: the Kafka run of webhooks cannot run in CI without a broker");
    });
  } else {
    test.skip("webhooks on Kafka (set KAFKA_BROKERS to run it)", () => {});
  }
} else {
  describe("webhooks on Kafka and MongoDB", () => {
    let h: Harness | undefined;
    beforeAll(async () => {
      // Topics of this run alone: other suites share the cluster.
      const bus = new NamespacedEventBus(new KafkaEventBus({ brokers, clientId: "webhooks-test", logger: () => {} }), `webhooks_${newId("ns").slice(3, 15)}`);
      h = await startHarness("mongodb", { bus });
    }, 90_000);
    afterAll(async () => {
      await h?.close();
    }, 60_000);

    it("records an event the bus delivers twice once, and the receiver verifies what it gets", async () => {
      const call = tenant("live");
      const created = await h!.client.createWebhook({ url: h!.url("/kafka"), events: ["email.sent", "email.delivered"], description: "" }, as(call));
      const eventId = newId("evt");
      const emailId = newId("eml");
      await h!.publish("email.status", call, { emailId, status: "sent" }, eventId);
      await h!.publish("email.status", call, { emailId, status: "sent" }, eventId);
      await h!.publish("email.status", call, { emailId, status: "delivered" });
      const arrived = await waitFor(() => (h!.receiver.to("/kafka").length >= 2 ? h!.receiver.to("/kafka") : undefined), "the webhooks", 45_000);
      const types = arrived.map((r) => (new Webhook(created.secret).verify(r.body, r.headers) as { type: string }).type);
      expect(types.sort()).toEqual(["email.delivered", "email.sent"]);
      const log = (await h!.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call))).deliveries;
      expect(log).toHaveLength(2);
      expect(new Set(arrived.map((r) => r.headers["webhook-id"]))).toEqual(new Set(log.map((d) => d.id)));
    });

    it("expands a batch of a campaign's outcomes the bus delivers twice into one webhook per email", async () => {
      const call = tenant("live");
      const created = await h!.client.createWebhook({ url: h!.url("/batch"), events: ["email.sent", "email.failed"], description: "" }, as(call));
      const eventId = newId("evt");
      const campaignId = newId("cmp");
      const outcomes = ["sent", "failed", "held"].map((status) => ({ emailId: newId("eml"), subscriberId: newId("sub"), campaignId, status }));
      await h!.publish("email.status", call, { outcomes }, eventId);
      await h!.publish("email.status", call, { outcomes }, eventId);
      // Then one of the same key (the same partition, handled after both).
      await h!.publish("email.status", call, { emailId: outcomes[0]!.emailId, status: "failed" });
      const arrived = await waitFor(() => (h!.receiver.to("/batch").length >= 3 ? h!.receiver.to("/batch") : undefined), "the webhooks", 45_000);
      const bodies = arrived.map((r) => new Webhook(created.secret).verify(r.body, r.headers) as { type: string; data: { email_id: string } });
      expect(bodies.map((b) => [b.type, b.data.email_id]).sort()).toEqual(
        [
          ["email.sent", outcomes[0]!.emailId],
          ["email.failed", outcomes[1]!.emailId],
          ["email.failed", outcomes[0]!.emailId],
        ].sort(),
      );
      const log = (await h!.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call))).deliveries;
      expect(log).toHaveLength(3);
      expect(new Set(arrived.map((r) => r.headers["webhook-id"]))).toEqual(new Set(log.map((d) => d.id)));
    });
  });
}
