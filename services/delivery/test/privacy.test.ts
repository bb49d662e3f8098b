import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { delivery, events } from "@emailsvc/proto";
import { newId } from "@emailsvc/ids";
import { type CallContext } from "@emailsvc/tenancy";
import { as, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// Delivery's part of GDPR export and erasure: ExportSubscriberData lists a
// subscriber's emails (and nobody else's), and subscriber.deleted leaves
// nothing of them in the database, the embedded store's datafiles included.

const WELCOME = { slug: "welcome", subject: "Welcome {{name}}, {{metadata.city}}", html: "<p>Hello {{name}} from {{metadata.city}}</p>" };

describe.each<StoreKind>(["embedded", "mongodb"])("delivery's export and erasure, %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ store: kind });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function publishDeleted(call: CallContext, subscriberId: string): Promise<void> {
    const eventId = newId("evt");
    const meta = create(events.EventMetaSchema, { eventId, accountId: call.tenant.accountId, mode: call.tenant.mode, occurredAt: timestampFromMs(Date.now()) });
    const value = toBinary(events.SubscriberDeletedSchema, create(events.SubscriberDeletedSchema, { meta, subscriberId }));
    await h.bus.publish("subscriber.deleted", [{ key: subscriberId, value, headers: { "event-id": eventId, "event-type": "subscriber.deleted" } }]);
  }

  const settled = (call: CallContext, id: string) =>
    waitFor(async () => {
      const e = (await h.client.getEmail({ id }, as(call))).email!;
      return e.status === delivery.EmailStatus.QUEUED ? undefined : e;
    }, `email ${id} settled`);

  /** Every byte delivery's database holds: the datafiles (embedded), or every document of its collections (MongoDB). */
  async function everything(): Promise<string> {
    if (h.dataDir) {
      return readdirSync(h.dataDir)
        .filter((name) => name !== ".lock")
        .map((name) => readFileSync(join(h.dataDir!, name), "latin1"))
        .join("\n");
    }
    const docs = await Promise.all(["emails", "sandbox_messages", "cancelled_campaigns"].map((name) => h.store.collection(name).find({})));
    return JSON.stringify(docs);
  }

  it("exports a subscriber's emails with the subject as rendered, nobody else's; an unknown subscriber has none", async () => {
    const t = tenant();
    h.templates.put(t, WELCOME);
    const ada = h.subscribers.put(t, "ada.export@example.com", { city: "Basel" });
    h.subscribers.put(t, "bob.export@example.com", { city: "Bern" });
    const first = (await h.client.sendEmail({ templateSlug: "welcome", to: "ada.export@example.com", variables: { name: "Ada" } }, as(t))).email!;
    const second = (await h.client.sendEmail({ templateSlug: "welcome", to: "Ada.Export@example.com", variables: { name: "Ada L." }, idempotencyKey: "k-1" }, as(t))).email!;
    const bobs = (await h.client.sendEmail({ templateSlug: "welcome", to: "bob.export@example.com", variables: { name: "Bob" } }, as(t))).email!;
    for (const e of [first, second, bobs]) await settled(t, e.id);

    const part = JSON.parse((await h.client.exportSubscriberData({ subscriberId: ada }, as(t))).json);
    expect(part).toEqual({
      emails: [
        { id: first.id, template_id: first.templateId, template_version: 1, subject: "Welcome Ada, Basel", status: "sent", created_at: expect.stringMatching(/Z$/), sent_at: expect.stringMatching(/Z$/), campaign_id: null },
        { id: second.id, template_id: first.templateId, template_version: 1, subject: "Welcome Ada L., Basel", status: "sent", created_at: expect.stringMatching(/Z$/), sent_at: expect.stringMatching(/Z$/), campaign_id: null },
      ],
    });
    expect(JSON.stringify(part)).not.toContain("Bob");
    expect(JSON.parse((await h.client.exportSubscriberData({ subscriberId: "sub_00000000000000000000000000" }, as(t))).json)).toEqual({ emails: [] });
    expect(JSON.parse((await h.client.exportSubscriberData({ subscriberId: "" }, as(t))).json)).toEqual({ emails: [] });
    // Another tenant asking for the same id sees nothing.
    expect(JSON.parse((await h.client.exportSubscriberData({ subscriberId: ada }, as(tenant()))).json)).toEqual({ emails: [] });
  });

  it("erasure leaves nothing of the subscriber: not the address, the id, the variables, the subject, the key; mail sent to the address unlinked goes too", async () => {
    const t = tenant();
    h.templates.put(t, WELCOME);
    const email = `Forget.Me.${Date.now().toString(36)}@Example.com`;
    // Sent before the address was a subscriber's: not linked, found by its address.
    const unlinked = (await h.client.sendEmail({ templateSlug: "welcome", to: email, variables: { name: "Early-Name-9c1" } }, as(t))).email!;
    await settled(t, unlinked.id);
    const subscriberId = h.subscribers.put(t, email, { city: "Secret-City-5e2" });
    const linked = (await h.client.sendEmail({ templateSlug: "welcome", to: email, variables: { name: "Variable-Name-7d4" }, idempotencyKey: `order-for-${email}` }, as(t))).email!;
    await settled(t, linked.id);
    const other = h.subscribers.put(t, "remains@example.com", { city: "Zug" });
    const kept = (await h.client.sendEmail({ templateSlug: "welcome", to: "remains@example.com", variables: { name: "Kept-Name" } }, as(t))).email!;
    await settled(t, kept.id);
    expect((await everything()).includes("Secret-City-5e2")).toBe(true); // rendered into the kept message

    h.subscribers.remove(t, email);
    await publishDeleted(t, subscriberId);
    const secrets = [email, email.toLowerCase(), subscriberId, "Secret-City-5e2", "Variable-Name-7d4", "Early-Name-9c1", `order-for-${email}`];
    const text = await waitFor(async () => {
      const all = await everything();
      return secrets.some((s) => all.includes(s)) ? undefined : all;
    }, "nothing of the subscriber left");
    expect(secrets.filter((s) => text.includes(s))).toEqual([]);
    // The records stay as anonymous counts; the other subscriber's mail is whole.
    for (const id of [unlinked.id, linked.id]) expect((await h.client.getEmail({ id }, as(t))).email).toMatchObject({ to: "", status: delivery.EmailStatus.SENT });
    expect(text).toContain("Kept-Name");
    expect((await h.client.getEmail({ id: kept.id }, as(t))).email!.to).toBe("remains@example.com");
    expect(JSON.parse((await h.client.exportSubscriberData({ subscriberId }, as(t))).json)).toEqual({ emails: [] });
    expect(JSON.parse((await h.client.exportSubscriberData({ subscriberId: other }, as(t))).json).emails).toHaveLength(1);
  });
});
