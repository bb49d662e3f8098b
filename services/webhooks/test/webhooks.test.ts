import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEvent, publishEvents } from "@emailsvc/events";
import { newId } from "@emailsvc/ids";
import { tenantKey } from "@emailsvc/tenancy";
import { SubscriberStatus } from "@emailsvc/proto";
import { freePort, memoryLogger, openTestStore, STORE_KINDS } from "@emailsvc/testing";
import { generateKeyText, parseKeyRing, seal } from "@emailsvc/tokens";
import { Webhook } from "standardwebhooks";
import { createLogger } from "@emailsvc/telemetry";
import type { PostOutcome } from "../src/http/post.js";
import { startWebhooksService, type RunningWebhooksService } from "../src/server.js";
import type { EndpointDoc } from "../src/storage/documents.js";
import { WebhookStorage } from "../src/storage/repositories.js";
import { deliveryId } from "../src/usecases/deliveries.js";
import { purgeDeliveryLog } from "../src/usecases/purge-delivery-log.js";
import { as, startHarness, tenant, testResolver, waitFor, type Harness } from "./harness.js";

// The webhooks service over real gRPC on both stores, with the platform's
// events published on a bus and an HTTP receiver standing for the
// integrator's endpoint; signatures checked by the Standard Webhooks
// reference library.

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail");
}

describe.each(STORE_KINDS)("webhooks (%s)", (kind) => {
  let h: Harness;
  const call = tenant("live");

  beforeEach(async () => {
    h = await startHarness(kind);
  });
  afterEach(async () => {
    await h.close();
  });

  const create = async (path: string, events: string[] = ["*"], call_ = call) =>
    h.client.createWebhook({ url: h.url(path), events, description: "test" }, as(call_));

  it("answers the secret once, stores it sealed, and signs with it", async () => {
    const created = await create("/hooks", ["subscriber.created"]);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = created.webhook!.id;
    // Never again: GET and the list have no secret field at all.
    const got = await h.client.getWebhook({ id }, as(call));
    expect(Object.keys(got.webhook!)).not.toContain("secret");
    const strings = (w: object) => Object.values(w).filter((v): v is string => typeof v === "string");
    expect(strings(got.webhook!).some((v) => v.includes(created.secret.slice(6, 20)))).toBe(false);
    const listed = (await h.client.listWebhooks({}, as(call))).webhooks;
    expect(listed.map((w) => w.id)).toEqual([id]);
    expect(Object.keys(listed[0]!)).not.toContain("secret");
    // At rest: sealed, the clear secret nowhere in the document.
    const stored = await h.store.collection<{ _id: string } & Record<string, any>>("webhook_endpoints").findOne({ _id: id });
    expect(stored!.secret_sealed).toMatch(/^s1\./);
    expect(JSON.stringify(stored)).not.toContain(created.secret.slice(6));

    const subscriberId = newId("sub");
    await h.publish("subscriber.created", call, { subscriberId, tagIds: [], status: SubscriberStatus.ACTIVE });
    const [request] = await waitFor(() => (h.receiver.to("/hooks").length > 0 ? h.receiver.to("/hooks") : undefined), "the webhook");
    const verified = new Webhook(created.secret).verify(request!.body, request!.headers) as Record<string, any>;
    expect(verified).toEqual({
      type: "subscriber.created",
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: { subscriber_id: subscriberId, status: "active", tag_ids: [] },
    });
    expect(request!.headers["webhook-id"]).toMatch(/^msg_[0-9a-z]{26}$/);
    // Altered, it does not verify.
    expect(() => new Webhook(created.secret).verify(request!.body.replace("active", "bounced"), request!.headers)).toThrow();
  });

  it("sends an event delivered twice by the bus once, and only to endpoints asking for its type", async () => {
    await create("/all");
    await create("/emails", ["email.sent", "email.bounced"]);
    await create("/subs", ["subscriber.created"]);
    const eventId = newId("evt");
    const emailId = newId("eml");
    await h.publish("email.status", call, { emailId, status: "sent" }, eventId);
    await h.publish("email.status", call, { emailId, status: "sent" }, eventId);
    // A status this build of delivery does not produce yet is forwarded by its name.
    await h.publish("email.status", call, { emailId, status: "bounced", reason: "mailbox_unknown" });
    // Not for integrators: a paused campaign's held email.
    await h.publish("email.status", call, { emailId, status: "held" });
    await waitFor(() => (h.receiver.to("/emails").length >= 2 && h.receiver.to("/all").length >= 2 ? true : undefined), "the webhooks");
    const deliveries = await h.store.collection<{ _id: string } & Record<string, any>>("webhook_deliveries").find({});
    expect(deliveries.filter((d) => d.event_id === eventId)).toHaveLength(2);
    expect(h.receiver.to("/subs")).toHaveLength(0);
    const types = h.receiver.to("/emails").map((r) => JSON.parse(r.body));
    expect(types.map((t) => t.type).sort()).toEqual(["email.bounced", "email.sent"]);
    expect(types.find((t) => t.type === "email.bounced").data).toEqual({ email_id: emailId, to: null, subscriber_id: null, campaign_id: null, status: "bounced", reason: "mailbox_unknown" });
    // Redelivered: still one message per endpoint (the webhook-id is derived from event and endpoint).
    const ids = h.receiver.to("/all").map((r) => r.headers["webhook-id"]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("makes a batch of a campaign's outcomes one webhook per email, with ids of the batch and the email: a redelivered batch sends none twice", async () => {
    const emails = await create("/emails", ["email.sent", "email.suppressed"]);
    const campaignId = newId("cmp");
    const outcome = (status: string, extra: object = {}) => ({ emailId: newId("eml"), subscriberId: newId("sub"), campaignId, status, ...extra });
    const sent = outcome("sent");
    const refused = outcome("suppressed", { reason: "recipient_unsubscribed", afterMs: 1500 });
    const held = outcome("held", { afterMs: 2000 });
    const eventId = newId("evt");
    const occurredAt = Date.parse("2026-11-27T20:00:00.000Z");
    const batch = encodeEvent("email.status", { eventId, tenant: tenantKey(call.tenant), occurredAt }, { outcomes: [sent, refused, held] });
    await publishEvents(h.bus, [batch]);
    // The one-email form of a delivery from before batches, beside it.
    const alone = outcome("sent");
    await h.publish("email.status", call, { emailId: alone.emailId, subscriberId: alone.subscriberId, campaignId, status: "sent" });
    await waitFor(() => (h.receiver.to("/emails").length >= 3 ? true : undefined), "the webhooks");
    // Redelivered (the bus' at-least-once): the same ids, recorded once. Then an event of the same key (so of
    // the same partition, handled after it) for another endpoint, to know the redelivery was handled.
    await create("/marker", ["email.delivered"]);
    await publishEvents(h.bus, [batch]);
    await h.publish("email.status", call, { emailId: sent.emailId, status: "delivered" });
    await waitFor(() => (h.receiver.to("/marker").length > 0 ? true : undefined), "the event after the redelivery");
    const bodies = h.receiver.to("/emails").map((r) => ({ id: r.headers["webhook-id"], body: JSON.parse(r.body) as Record<string, any> }));
    expect(bodies).toHaveLength(3);
    const of = (emailId: string) => bodies.find((b) => b.body.data.email_id === emailId)!;
    expect(of(sent.emailId).body).toEqual({
      type: "email.sent",
      timestamp: "2026-11-27T20:00:00.000Z",
      data: { email_id: sent.emailId, to: null, subscriber_id: sent.subscriberId, campaign_id: campaignId, status: "sent", reason: null },
    });
    // Each at its own time: the batch's and its item's offset.
    expect(of(refused.emailId).body).toMatchObject({ type: "email.suppressed", timestamp: "2026-11-27T20:00:01.500Z", data: { reason: "recipient_unsubscribed" } });
    expect(of(alone.emailId).body).toMatchObject({ type: "email.sent", data: { email_id: alone.emailId, campaign_id: campaignId } });
    // The webhook-id: of the batch's event id and the email id, with the endpoint's.
    const endpointId = emails.webhook!.id;
    expect(of(sent.emailId).id).toBe(deliveryId(`${eventId}/${sent.emailId}`, endpointId));
    expect(of(refused.emailId).id).toBe(deliveryId(`${eventId}/${refused.emailId}`, endpointId));
    expect(new Set(bodies.map((b) => b.id)).size).toBe(3);
    // Held is not an event for integrators.
    expect(bodies.some((b) => b.body.data.email_id === held.emailId)).toBe(false);
    expect(await h.store.collection("webhook_deliveries").count({ endpoint_id: endpointId })).toBe(3);
  });

  it("retries a failed attempt and logs every attempt; a replay sends the same webhook-id again", async () => {
    const created = await create("/flaky", ["subscriber.deleted"]);
    h.receiver.answer("/flaky", 500);
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const log = await waitFor(async () => {
      const page = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
      return page.deliveries[0]?.state === "delivered" ? page.deliveries : undefined;
    }, "the retried delivery");
    expect(log).toHaveLength(1);
    expect(log[0]!.attempts).toBe(2);
    expect(log[0]!.attemptLog.map((a) => a.responseCode)).toEqual([500, 200]);
    expect(log[0]!.attemptLog[0]!.error).toBe("the endpoint answered 500");
    expect(log[0]!.lastResponseCode).toBe(200);
    const [first, second] = h.receiver.to("/flaky");
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);

    const replayed = await h.client.replayWebhookDelivery({ webhookId: created.webhook!.id, deliveryId: log[0]!.id }, as(call));
    expect(replayed.delivery!.state).toBe("pending");
    await waitFor(() => (h.receiver.to("/flaky").length === 3 ? true : undefined), "the replay");
    expect(h.receiver.to("/flaky")[2]!.headers["webhook-id"]).toBe(log[0]!.id);
    new Webhook(created.secret).verify(h.receiver.to("/flaky")[2]!.body, h.receiver.to("/flaky")[2]!.headers);
    // Another tenant's key cannot replay it, nor see the log.
    const other = tenant("live");
    expect((await failure(h.client.replayWebhookDelivery({ webhookId: created.webhook!.id, deliveryId: log[0]!.id }, as(other)))).code).toBe(Code.NotFound);
    expect((await failure(h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(other)))).code).toBe(Code.NotFound);
  });

  it("does not follow a redirect: a 3xx is a failed attempt, and the target gets nothing", async () => {
    const created = await create("/moved", ["subscriber.deleted"]);
    h.receiver.answer("/moved", { redirect: `http://127.0.0.1:${h.receiver.port}/target` });
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const delivery = await waitFor(async () => {
      const page = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
      return (page.deliveries[0]?.attempts ?? 0) >= 1 ? page.deliveries[0] : undefined;
    }, "the attempt");
    expect(delivery.attemptLog[0]).toMatchObject({ responseCode: 302, error: "redirect not followed (302); give the final URL" });
    expect(h.receiver.to("/target")).toHaveLength(0);
  });

  it("rotates the secret: both the old and the new one verify during the overlap", async () => {
    const created = await create("/rotated", ["subscriber.deleted"]);
    const rotated = await h.client.rotateWebhookSecret({ id: created.webhook!.id }, as(call));
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.webhook!.previousSecretExpiresAt).toBeDefined();
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const [request] = await waitFor(() => (h.receiver.to("/rotated").length > 0 ? h.receiver.to("/rotated") : undefined), "the webhook");
    expect(request!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    new Webhook(rotated.secret).verify(request!.body, request!.headers);
    new Webhook(created.secret).verify(request!.body, request!.headers);
  });

  it("keeps tenants apart: another tenant's endpoints are invisible and get none of its events", async () => {
    const mine = await create("/mine", ["subscriber.deleted"]);
    const other = tenant("live");
    const theirs = await create("/theirs", ["subscriber.deleted"], other);
    // The test mode of the same account is another tenant too.
    const testMode = tenant("test", call.tenant.accountId);
    expect((await failure(h.client.getWebhook({ id: mine.webhook!.id }, as(other)))).code).toBe(Code.NotFound);
    expect((await failure(h.client.getWebhook({ id: mine.webhook!.id }, as(testMode)))).code).toBe(Code.NotFound);
    expect((await failure(h.client.deleteWebhook({ id: mine.webhook!.id }, as(other)))).code).toBe(Code.NotFound);
    expect((await h.client.listWebhooks({}, as(other))).webhooks.map((w) => w.id)).toEqual([theirs.webhook!.id]);
    await h.publish("subscriber.deleted", other, { subscriberId: newId("sub") });
    await waitFor(() => (h.receiver.to("/theirs").length > 0 ? true : undefined), "their webhook");
    expect(h.receiver.to("/mine")).toHaveLength(0);
  });

  it("passes over the events of a tenant without an endpoint; one created while events flow gets every event after it", async () => {
    const other = tenant("live");
    await create("/witness", ["subscriber.deleted"], other);
    // One key, so one partition in order: once the other tenant's webhook is out, the first event was handled.
    const subscriberId = newId("sub");
    const before = await h.publish("subscriber.deleted", call, { subscriberId });
    await h.publish("subscriber.deleted", other, { subscriberId });
    await waitFor(() => (h.receiver.to("/witness").length === 1 ? true : undefined), "the witness's webhook");
    const late = await create("/late", ["subscriber.deleted"]);
    const after = await h.publish("subscriber.deleted", call, { subscriberId });
    await h.publish("subscriber.deleted", other, { subscriberId });
    await waitFor(() => (h.receiver.to("/witness").length === 2 ? true : undefined), "the witness's second webhook");
    await waitFor(() => (h.receiver.to("/late").length > 0 ? true : undefined), "the late endpoint's webhook");
    // Recorded before the bus moved past them: the second witness came after both events of this tenant.
    const log = await h.client.listWebhookDeliveries({ webhookId: late.webhook!.id, limit: 10 }, as(call));
    expect(log.deliveries.map((d) => d.id)).toEqual([deliveryId(after, late.webhook!.id)]);
    expect(h.receiver.to("/late").map((r) => r.headers["webhook-id"])).toEqual([deliveryId(after, late.webhook!.id)]);
    expect(deliveryId(before, late.webhook!.id)).not.toBe(deliveryId(after, late.webhook!.id));
  });

  it("refuses bad input with a clear error and stores nothing", async () => {
    const bad = async (input: { url: string; events: string[]; description?: string }) =>
      failure(h.client.createWebhook({ description: "", ...input }, as(call)));
    const unknown = await bad({ url: h.url("/x"), events: ["email.sent", "email.opened"] });
    expect(unknown.code).toBe(Code.InvalidArgument);
    expect(unknown.message).toContain('"email.opened"');
    expect((await bad({ url: h.url("/x"), events: ["*", "email.sent"] })).code).toBe(Code.InvalidArgument);
    expect((await bad({ url: h.url("/x"), events: [] })).code).toBe(Code.InvalidArgument);
    expect((await bad({ url: "ftp://receiver.test/x", events: ["*"] })).code).toBe(Code.InvalidArgument);
    expect((await bad({ url: "not a url", events: ["*"] })).code).toBe(Code.InvalidArgument);
    expect((await bad({ url: "https://user:pass@example.com/x", events: ["*"] })).code).toBe(Code.InvalidArgument);
    // Literal addresses webhooks never call, even with 127.0.0.0/8 allowed here.
    for (const url of ["http://169.254.169.254/latest/meta-data", "http://10.0.0.1/", "http://[fd00:ec2::254]/", "http://[::ffff:169.254.169.254]/", "http://0.0.0.0/", "http://224.0.0.1/"]) {
      const refused = await bad({ url, events: ["*"] });
      expect([url, refused.code, refused.message]).toEqual([url, Code.InvalidArgument, expect.stringContaining("webhooks never call")]);
    }
    expect((await h.client.listWebhooks({}, as(call))).webhooks).toHaveLength(0);
    // An update with a bad field changes nothing.
    const created = await create("/fine", ["email.sent"]);
    expect((await failure(h.client.updateWebhook({ id: created.webhook!.id, url: "http://[::1]/", events: { events: ["email.failed"] } }, as(call)))).code).toBe(
      Code.InvalidArgument,
    );
    const got = await h.client.getWebhook({ id: created.webhook!.id }, as(call));
    expect([got.webhook!.url, got.webhook!.events]).toEqual([h.url("/fine"), ["email.sent"]]);
  });

  it("pages an endpoint's log newest first with the cursors it mints, and refuses another", async () => {
    const created = await create("/paged", ["subscriber.deleted"]);
    for (let i = 0; i < 3; i++) await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    await waitFor(() => (h.receiver.to("/paged").length === 3 ? true : undefined), "three webhooks");
    const first = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id, limit: 2 }, as(call));
    expect(first.deliveries).toHaveLength(2);
    const second = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id, limit: 2, cursor: first.nextCursor }, as(call));
    expect(second.deliveries).toHaveLength(1);
    expect(second.nextCursor).toBe("");
    const ids = [...first.deliveries, ...second.deliveries].map((d) => d.id);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(new Set(ids)).toEqual(new Set(h.receiver.to("/paged").map((r) => r.headers["webhook-id"])));
    // A cursor of another endpoint's log is not this one's.
    const other = await create("/other", ["subscriber.deleted"]);
    expect((await failure(h.client.listWebhookDeliveries({ webhookId: other.webhook!.id, limit: 2, cursor: first.nextCursor }, as(call)))).code).toBe(Code.InvalidArgument);
  });

  it("refuses more endpoints than the bound, and nothing is stored", async () => {
    const other = tenant("live");
    for (let i = 0; i < 20; i++) await create(`/n${i}`, ["*"], other);
    const refused = await failure(create("/one-too-many", ["*"], other));
    expect([refused.code, refused.message]).toEqual([Code.AlreadyExists, expect.stringContaining("at most 20")]);
    expect((await h.client.listWebhooks({ limit: 500 }, as(other))).webhooks).toHaveLength(20);
    // Another tenant's bound is its own.
    await create("/mine");
  });

  it("fails a delivery whose secret SEALING_KEYS can no longer open, saying so, and sends nothing unsigned", async () => {
    const created = await create("/sealed", ["subscriber.deleted"]);
    // Sealed under a key the service's ring does not hold (a key removed from SEALING_KEYS too early).
    const lost = seal(parseKeyRing(generateKeyText("gone"), "SEALING_KEYS"), "webhook-secret", created.secret);
    await h.store.collection<EndpointDoc>("webhook_endpoints").updateOne({ _id: created.webhook!.id }, { $set: { secret_sealed: lost } });
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const failed = await waitFor(async () => {
      const page = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
      return page.deliveries[0]?.state === "failed" ? page.deliveries[0] : undefined;
    }, "the delivery failed");
    expect(failed.lastError).toMatch(/^secret_unreadable: /);
    expect(h.receiver.to("/sealed")).toHaveLength(0);
  });

  it("erases what the log held about a subscriber when they are erased, and tells the endpoint", async () => {
    const created = await create("/erasure");
    const subscriberId = newId("sub");
    await h.publish("subscriber.created", call, { subscriberId, tagIds: [], status: SubscriberStatus.ACTIVE });
    await waitFor(() => (h.receiver.to("/erasure").length === 1 ? true : undefined), "the created webhook");
    await h.publish("subscriber.deleted", call, { subscriberId });
    await waitFor(() => (h.receiver.to("/erasure").length === 2 ? true : undefined), "the deleted webhook");
    const log = (await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call))).deliveries;
    expect(log.map((d) => d.eventType)).toEqual(["subscriber.deleted"]);
  });
});

describe.each(STORE_KINDS)("the delivery log's retention (%s)", (kind) => {
  it("deletes finished deliveries past the retention, in their tenants, and never a pending one", async () => {
    const { store, cleanup } = await openTestStore(kind, "webhooks");
    try {
      const storage = new WebhookStorage(store);
      await storage.createIndexes();
      const now = Date.now();
      const doc = (tenant: string, state: "pending" | "delivered" | "failed", updatedAt: number) => {
        const id = deliveryId(newId("evt"), "whk_x");
        const fields = { endpoint_id: "whk_x", event_id: "evt_x", event_type: "subscriber.deleted", payload: "{}", subscriber_id: "" };
        const outcome = { attempts: 1, next_attempt_at: 0, lease_until: 0, last_code: 200, last_duration_ms: 1, last_error: "", attempt_log: [] };
        const times = { last_attempt_at: updatedAt, retry_from: updatedAt, created_at: updatedAt, updated_at: updatedAt };
        return storage.forTenant(tenant).deliveries.insertOne({ _id: id, ...fields, state, ...outcome, ...times }).then(() => id);
      };
      const [a, b] = [`${newId("acc")}:live`, `${newId("acc")}:test`];
      const oldDelivered = await doc(a, "delivered", now - 10_000);
      const oldFailed = await doc(b, "failed", now - 10_000);
      const oldPending = await doc(a, "pending", now - 10_000);
      const recent = await doc(b, "delivered", now);
      expect(await purgeDeliveryLog(storage.finishedDeliveries(), (t) => storage.forTenant(t), now - 5_000)).toBe(2);
      const left = [...(await storage.forTenant(a).deliveries.find({})), ...(await storage.forTenant(b).deliveries.find({}))].map((d) => d._id).sort();
      expect(left).toEqual([oldPending, recent].sort());
      expect(left).not.toContain(oldDelivered);
      expect(left).not.toContain(oldFailed);
    } finally {
      await store.close();
      cleanup();
    }
  });

  it("runs on the service's timer", async () => {
    const call = tenant("live");
    const h = await startHarness(kind, { logRetentionMs: 300, purgeIntervalMs: 50 });
    try {
      const created = await h.client.createWebhook({ url: h.url("/kept"), events: ["*"], description: "" }, as(call));
      await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
      await waitFor(() => (h.receiver.to("/kept").length === 1 ? true : undefined), "the webhook");
      await waitFor(async () => ((await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call))).deliveries.length === 0 ? true : undefined), "the purge");
    } finally {
      await h.close();
    }
  });
});

describe.each(STORE_KINDS)("a sender that dies mid-attempt (%s)", (kind) => {
  it("loses nothing and repeats only the same webhook-id; the dead attempt's late answer changes nothing", async () => {
    const call = tenant("live");
    // Instance A: its request goes out and never comes back (the process is as good as dead).
    const tried: Array<Record<string, string>> = [];
    let answerLate: (outcome: PostOutcome) => void = () => undefined;
    const hanging = new Promise<PostOutcome>((resolve) => (answerLate = resolve));
    const { logger, logs } = memoryLogger("webhooks-a");
    const a = await startHarness(kind, { logger, leaseMs: 300, post: async (_url, headers) => (tried.push(headers), hanging) });
    let b: RunningWebhooksService | undefined;
    try {
      const created = await a.client.createWebhook({ url: a.url("/crash"), events: ["*"], description: "" }, as(call));
      await a.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
      await waitFor(() => (tried.length === 1 ? true : undefined), "A's attempt");
      // Instance B, on the same store, takes the delivery over once A's lease has run out.
      b = await startWebhooksService({
        store: a.store,
        bus: a.bus,
        consumerGroup: "webhooks-b",
        logger: createLogger("webhooks-b", "silent"),
        port: 0,
        sealingKeys: a.sealingKeys,
        allowHttp: true,
        allowPrivateRanges: ["127.0.0.0/8"],
        resolver: testResolver(),
        leaseMs: 300,
        senderIntervalMs: 50,
      });
      const [request] = await waitFor(() => (a.receiver.to("/crash").length > 0 ? a.receiver.to("/crash") : undefined), "B's attempt");
      expect(request!.headers["webhook-id"]).toBe(tried[0]!["webhook-id"]);
      new Webhook(created.secret).verify(request!.body, request!.headers);
      const delivered = await waitFor(async () => {
        const page = await a.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
        return page.deliveries[0]?.state === "delivered" ? page.deliveries : undefined;
      }, "the delivery recorded");
      // A answers at last: its write is guarded by the lease it held, so it is dropped.
      answerLate({ ok: false, code: 500, durationMs: 1, error: "the endpoint answered 500" });
      await waitFor(() => (logs.some((l) => l.msg === "webhook attempt outcome dropped: its lease ran out") ? true : undefined), "A's late outcome dropped");
      const after = (await a.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call))).deliveries;
      expect(after).toHaveLength(1);
      expect([after[0]!.id, after[0]!.state, after[0]!.attempts]).toEqual([delivered[0]!.id, "delivered", 1]);
      expect(a.receiver.to("/crash")).toHaveLength(1);
    } finally {
      answerLate({ ok: false, code: 0, durationMs: 0, error: "closed" });
      await b?.close();
      await a.close();
    }
  });
});

describe.each(STORE_KINDS)("webhooks without the operator's allowance (%s)", (kind) => {
  it("never calls a host that resolves to loopback: the attempt fails saying so, and the receiver gets nothing", async () => {
    const call = tenant("live");
    const h = await startHarness(kind, { allowPrivateRanges: [] });
    try {
      // receiver.test is a name (accepted at create); it resolves to 127.0.0.1, refused at the attempt.
      const created = await h.client.createWebhook({ url: h.url("/private"), events: ["*"], description: "" }, as(call));
      await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
      const delivery = await waitFor(async () => {
        const page = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
        return (page.deliveries[0]?.attempts ?? 0) >= 1 ? page.deliveries[0] : undefined;
      }, "the refused attempt");
      expect(delivery.attemptLog[0]).toMatchObject({ responseCode: 0, error: expect.stringContaining("refused: the host resolves to a loopback") });
      expect(h.receiver.received).toHaveLength(0);
      // A literal loopback URL is refused at create.
      const literal = await failure(h.client.createWebhook({ url: `http://127.0.0.1:${h.receiver.port}/x`, events: ["*"], description: "" }, as(call)));
      expect(literal.code).toBe(Code.InvalidArgument);
    } finally {
      await h.close();
    }
  });
});

describe.each(STORE_KINDS)("email webhooks while delivery cannot say who an email went to (%s)", (kind) => {
  it("wait, without counting an attempt or sending anything without the address", async () => {
    const call = tenant("live");
    const { logger, logs } = memoryLogger("webhooks");
    // Nothing listens there: every GetEmail fails as when delivery is down.
    const h = await startHarness(kind, { logger, delivery: `http://127.0.0.1:${await freePort()}` });
    try {
      const created = await h.client.createWebhook({ url: h.url("/emails"), events: ["email.sent", "subscriber.deleted"], description: "" }, as(call));
      await h.publish("email.status", call, { emailId: newId("eml"), status: "sent" });
      await waitFor(() => (logs.some((l) => l.msg === "webhook waits: delivery did not give the email's recipient") ? true : undefined), "the wait");
      // Other events are not held up by it.
      await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
      await waitFor(() => (h.receiver.to("/emails").length === 1 ? true : undefined), "the subscriber webhook");
      expect(JSON.parse(h.receiver.to("/emails")[0]!.body).type).toBe("subscriber.deleted");
      const email = (await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call))).deliveries.find((d) => d.eventType === "email.sent");
      expect([email!.state, email!.attempts]).toEqual(["pending", 0]);
    } finally {
      await h.close();
    }
  });

  it("go without the address once their retry window is over, rather than never", async () => {
    const call = tenant("live");
    const h = await startHarness(kind, { delivery: `http://127.0.0.1:${await freePort()}`, retry: { delaysMs: [100], retryForMs: 1 } });
    try {
      const created = await h.client.createWebhook({ url: h.url("/late"), events: ["email.sent"], description: "" }, as(call));
      const emailId = newId("eml");
      await h.publish("email.status", call, { emailId, status: "sent" });
      const [request] = await waitFor(() => (h.receiver.to("/late").length > 0 ? h.receiver.to("/late") : undefined), "the webhook");
      const body = new Webhook(created.secret).verify(request!.body, request!.headers) as { data: Record<string, unknown> };
      expect(body.data).toMatchObject({ email_id: emailId, to: null });
    } finally {
      await h.close();
    }
  });
});

describe.each(STORE_KINDS)("webhook endpoints that keep failing (%s)", (kind) => {
  let h: Harness;
  const call = tenant("live");
  afterEach(async () => {
    await h.close();
  });

  it("turns off an endpoint whose every attempt failed for the setting's time, with a reason GET shows", async () => {
    h = await startHarness(kind, { disableAfterMs: 300, retry: { delaysMs: [100], retryForMs: 60_000 } });
    const created = await h.client.createWebhook({ url: h.url("/down"), events: ["*"], description: "" }, as(call));
    h.receiver.always("/down", 503);
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const disabled = await waitFor(async () => {
      const got = await h.client.getWebhook({ id: created.webhook!.id }, as(call));
      return got.webhook!.isActive ? undefined : got.webhook!;
    }, "the endpoint turned off");
    expect(disabled.disabledReason).toBe("failing");
    expect(disabled.disabledAt).toBeDefined();
    // Nothing more goes to it; turned on again, the reason is cleared.
    const attempts = h.receiver.to("/down").length;
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const log = await waitFor(async () => {
      const page = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
      return page.deliveries.some((d) => d.state === "failed" && d.lastError.startsWith("endpoint_disabled")) ? page : undefined;
    }, "the delivery failed while off");
    expect(log.deliveries.length).toBeGreaterThanOrEqual(1);
    expect(h.receiver.to("/down").length).toBeLessThanOrEqual(attempts + 1);
    const enabled = await h.client.updateWebhook({ id: created.webhook!.id, isActive: true }, as(call));
    expect([enabled.webhook!.isActive, enabled.webhook!.disabledReason]).toEqual([true, ""]);
  });

  it("gives a delivery up once its retry window is over", async () => {
    h = await startHarness(kind, { retry: { delaysMs: [100], retryForMs: 350 } });
    const created = await h.client.createWebhook({ url: h.url("/gone"), events: ["*"], description: "" }, as(call));
    h.receiver.always("/gone", 404);
    await h.publish("subscriber.deleted", call, { subscriberId: newId("sub") });
    const failed = await waitFor(async () => {
      const page = await h.client.listWebhookDeliveries({ webhookId: created.webhook!.id }, as(call));
      return page.deliveries[0]?.state === "failed" ? page.deliveries[0] : undefined;
    }, "the delivery given up");
    expect(failed.attempts).toBeGreaterThanOrEqual(2);
    expect(failed.nextAttemptAt).toBeUndefined();
    expect(failed.lastResponseCode).toBe(404);
  });
});
