import { createServer, type Server } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { encodeEvent, publishEvents } from "@emailsvc/events";
import { delivery, events } from "@emailsvc/proto";
import { tenantKey } from "@emailsvc/tenancy";
import { newId } from "@emailsvc/ids";
import type { EmailDoc } from "../src/storage/documents.js";
import { announcedStatuses, as, sleep, smtpProviders, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";
import { SmtpSink } from "@emailsvc/testing";

const WELCOME = { slug: "welcome", subject: "Hi {{name}}", html: "<p>Hello {{name}}</p>" };

async function freePort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function statusOf(h: Harness, id: string, call: ReturnType<typeof tenant>) {
  return (await h.client.getEmail({ id }, as(call))).email!;
}

describe("delivery when the process dies mid-send", () => {
  let h: Harness | undefined;
  let sink: SmtpSink | undefined;
  afterAll(async () => {
    await h?.close();
    await sink?.close();
  });

  it("sends the email after a restart, and the relay accepts it once (same Message-ID on every copy)", async () => {
    sink = await new SmtpSink().start();
    // A short lease so that the next instance may take the email over soon.
    const settings = { providers: smtpProviders(sink.url()), from: "Ops <ops@acme.example>", leaseMs: 1500 };
    h = await startHarness({ store: "embedded", ...settings });
    const t = tenant("live");
    h.templates.put(t, WELCOME);

    // The relay holds its reply to DATA; the service is stopped meanwhile and
    // cuts the send off after a short grace, writing nothing, as a crash would.
    sink.dataDelayMs = 3000;
    const dataIn = sink.nextData();
    const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "crash@example.com", variables: { name: "C" } }, as(t));
    const id = email!.id;
    await dataIn;
    const closing = h.service.close({ graceMs: 200 });
    await closing;
    sink.dataDelayMs = 0;

    // The relay never answered 250 on an open connection: it did not take the message.
    expect(sink.to("crash@example.com")).toHaveLength(1);
    await waitFor(() => (sink!.to("crash@example.com")[0]!.accepted === false ? true : undefined), "reply after the client left", 5000);

    // A new instance on the same store and bus: the event was never acknowledged,
    // so it comes again; the lease of the dead attempt runs out, then it is sent.
    await h.restart(settings);
    const sent = await waitFor(async () => {
      const e = await statusOf(h!, id, t);
      return e.status === delivery.EmailStatus.SENT ? e : undefined;
    }, "sent after restart");
    expect(sent.attempts).toBe(2);
    await sleep(300);
    const copies = sink.to("crash@example.com");
    expect(copies.filter((m) => m.accepted)).toHaveLength(1);
    expect(new Set(copies.map((m) => m.parsed.messageId))).toEqual(new Set([`<${id}@acme.example>`]));
  });
});

describe("delivery when a send takes longer than its lease", () => {
  it("renews the lease while the relay takes its time, and sends once", async () => {
    const sink = await new SmtpSink().start();
    const h = await startHarness({ store: "embedded", providers: smtpProviders(sink.url()), leaseMs: 400 });
    try {
      const t = tenant("live");
      h.templates.put(t, WELCOME);
      sink.dataDelayMs = 2000;
      const dataIn = sink.nextData();
      const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "slow@example.com", variables: { name: "S" } }, as(t));
      await dataIn;
      // Several leases into the hand-off, the attempt still holds the email.
      await sleep(1200);
      const held = (await h.store.collection<EmailDoc>("emails").findOne({ _id: email!.id }))!;
      expect(held.status).toBe("queued");
      expect(held.lease_until).toBeGreaterThan(Date.now());
      const sent = await waitFor(async () => {
        const e = await statusOf(h, email!.id, t);
        return e.status === delivery.EmailStatus.SENT ? e : undefined;
      }, "sent");
      expect(sent.attempts).toBe(1);
      expect(sink.to("slow@example.com")).toHaveLength(1);
    } finally {
      await h.close();
      await sink.close();
    }
  });
});

describe("delivery when a send outlasts its attempt's deadline", () => {
  it("cuts the hand-off off at attemptTimeoutMs, frees the email for a retry, and sends it once the relay answers", async () => {
    const sink = await new SmtpSink().start();
    const h = await startHarness({ store: "embedded", providers: smtpProviders(sink.url()), leaseMs: 5000, attemptTimeoutMs: 400 });
    try {
      const t = tenant("live");
      h.templates.put(t, WELCOME);
      sink.dataDelayMs = 5000;
      const dataIn = sink.nextData();
      const started = Date.now();
      const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "deadline@example.com", variables: { name: "D" } }, as(t));
      await dataIn;
      // The deadline, not the lease (5 s) or the relay (5 s), ended the attempt: deferred as a transient failure.
      const released = await waitFor(async () => {
        const doc = await h.store.collection<EmailDoc>("emails").findOne({ _id: email!.id });
        return doc && doc.transient_failures > 0 ? doc : undefined;
      }, "the attempt cut off at its deadline", 4000);
      expect(Date.now() - started).toBeLessThan(4000);
      expect(released.status).toBe("deferred");
      expect(released.last_error).toMatch(/^send timed out/);
      sink.dataDelayMs = 0;
      const sent = await waitFor(async () => {
        const e = await statusOf(h, email!.id, t);
        return e.status === delivery.EmailStatus.SENT ? e : undefined;
      }, "sent on a later attempt");
      expect(sent.attempts).toBeGreaterThanOrEqual(2);
      expect(sink.to("deadline@example.com").filter((m) => m.accepted)).toHaveLength(1);
    } finally {
      await h.close();
      await sink.close();
    }
  });
});

describe("delivery under many send requests at once", () => {
  it("hands several emails to the relay at once (up to its pool), each sent once", async () => {
    const sink = await new SmtpSink().start();
    // pool=5: the SMTP provider's connections; concurrency 8 lets a batch use them all.
    const h = await startHarness({ store: "embedded", providers: smtpProviders(`${sink.url()}?pool=5`), sendConcurrency: 8 });
    try {
      const t = tenant("live");
      h.templates.put(t, WELCOME);
      // The relay holds each reply a while, so that sends overlap when they can.
      sink.dataDelayMs = 250;
      const ids: string[] = [];
      for (let i = 0; i < 24; i++) {
        const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: `many${i}@example.com`, variables: { name: `M${i}` } }, as(t));
        ids.push(email!.id);
      }
      let mostAtOnce = 0;
      await waitFor(() => {
        // Arrived at the relay and not yet answered: hand-offs in flight right now.
        mostAtOnce = Math.max(mostAtOnce, sink.messages.filter((m) => !m.accepted).length);
        return sink.accepted.length >= ids.length ? true : undefined;
      }, "every email accepted by the relay", 30_000);
      // One partition's events one at a time (the in-process bus has 3) would never exceed 3.
      expect(mostAtOnce).toBeGreaterThanOrEqual(4);
      expect(mostAtOnce).toBeLessThanOrEqual(5);
      for (let i = 0; i < ids.length; i++) expect(sink.to(`many${i}@example.com`)).toHaveLength(1);
      const statuses = await Promise.all(ids.map((id) => statusOf(h, id, t)));
      expect(statuses.every((e) => e.status === delivery.EmailStatus.SENT && e.attempts === 1)).toBe(true);
    } finally {
      await h.close();
      await sink.close();
    }
  });
});

describe("delivery when a send request was lost", () => {
  it("requests a stalled queued email again and sends it", async () => {
    const h = await startHarness({ store: "embedded", stalledAfterMs: 300 });
    try {
      const t = tenant("test");
      h.templates.put(t, WELCOME);
      const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "first@example.com", variables: { name: "F" } }, as(t));
      await waitFor(async () => ((await statusOf(h, email!.id, t)).status === delivery.EmailStatus.SENT ? true : undefined), "first sent");
      // An email whose send request is gone from the bus. Both buses keep their events across
      // restarts; this stands for one lost anyway (a topic recreated, a bus directory deleted).
      const emails = h.store.collection<EmailDoc>("emails");
      const original = (await emails.findOne({ _id: email!.id }))!;
      const lostId = newId("eml");
      const longAgo = Date.now() - 60_000;
      await emails.insertOne({
        ...original,
        _id: lostId,
        idem_key: `none:${lostId}`,
        to: "lost@example.com",
        to_key: "lost@example.com",
        status: "queued",
        message_id: "",
        attempts: 0,
        sent_at: null,
        queued_at: longAgo,
        updated_at: longAgo,
        outbox: [],
        outbox_pending: false,
      });
      const sent = await waitFor(async () => {
        const e = await statusOf(h, lostId, t);
        return e.status === delivery.EmailStatus.SENT ? e : undefined;
      }, "the lost email sent");
      expect(sent.attempts).toBe(1);
      expect((await h.client.getSandboxMessage({ emailId: lostId }, as(t))).message!.to).toBe("lost@example.com");
    } finally {
      await h.close();
    }
  });
});

describe.each<StoreKind>(["embedded", "mongodb"])("the stalled-mail sweep and a paused campaign (%s)", (kind) => {
  // Issue 16's second review: an email of a paused campaign is held (queued,
  // unclaimed), and the stalled-mail sweep asked for every held email again
  // each DELIVERY_STALLED_AFTER_MS: a warning, an intake pass and a recipient
  // lookup per email, for as long as the pause lasted, only to hold it again.
  it("leaves a paused campaign's held email alone while it asks again for other stalled mail", async () => {
    const h = await startHarness({ store: kind, stalledAfterMs: 300 });
    try {
      const t = tenant("test");
      const key = tenantKey(t.tenant);
      const templateId = h.templates.put(t, WELCOME);
      const subscriberId = h.subscribers.put(t, "held@example.com", { name: "H" });
      const campaignId = newId("cmp");
      const meta = () => ({ eventId: newId("evt"), tenant: key, occurredAt: Date.now() });
      const emails = h.store.collection<EmailDoc>("emails");

      // The campaign is paused, and delivery knows it.
      await publishEvents(h.bus, [encodeEvent("campaign.status_changed", meta(), { campaignId, status: "paused" })]);
      await waitFor(async () => ((await h.store.collection("paused_campaigns").findOne({ _id: campaignId })) ? true : undefined), "the pause recorded");
      // A recipient handed over meanwhile is held: not sent, still queued.
      const heldId = newId("eml");
      await publishEvents(h.bus, [encodeEvent("email.send.requested", meta(), { emailId: heldId, campaignId, subscriberId, templateId, templateVersion: 1 })]);
      await waitFor(() => (announcedStatuses(h, heldId).includes("held") ? true : undefined), "the email held");
      const held = (await emails.findOne({ _id: heldId }))!;
      expect(held).toMatchObject({ status: "queued", lease_until: 0 });

      // Another queued email nothing is happening to, untouched since after the hold: the sweep asks for it again...
      const lostId = newId("eml");
      const now = Date.now();
      await emails.insertOne({
        ...held,
        _id: lostId,
        idem_key: `none:${lostId}`,
        to: "lost@example.com",
        to_key: "lost@example.com",
        subscriber_id: "",
        campaign_id: "",
        queued_at: now,
        updated_at: now,
        outbox: [],
        outbox_pending: false,
      });
      await waitFor(async () => ((await statusOf(h, lostId, t)).status === delivery.EmailStatus.SENT ? true : undefined), "the stalled email sent");
      // ...in the same pass that finds the held one (untouched for longer), which it leaves alone.
      expect(await emails.findOne({ _id: heldId })).toMatchObject({ status: "queued", version: held.version, updated_at: held.updated_at });
      const requests = h.received.filter((e) => e.topic === "email.send.requested" && fromBinary(events.EmailSendRequestedSchema, e.value).emailId === heldId);
      expect(requests).toHaveLength(1);
      expect(announcedStatuses(h, heldId)).toEqual(["held"]);
    } finally {
      await h.close();
    }
  });
});

describe("delivery when the relay is unreachable", () => {
  let h: Harness | undefined;
  let sink: SmtpSink | undefined;
  afterAll(async () => {
    await h?.close();
    await sink?.close();
  });

  it("defers an email while its connection is refused, retries it until a relay appears, then sends once", async () => {
    const port = await freePort();
    h = await startHarness({ store: "embedded", providers: smtpProviders(`smtp://127.0.0.1:${port}`) });
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "patient@example.com", variables: { name: "P" } }, as(t));
    const id = email!.id;
    // Refused again and again, deferred meanwhile with its next attempt's time.
    await waitFor(async () => ((await statusOf(h!, id, t)).attempts >= 4 ? true : undefined), "several refused attempts");
    const waiting = await statusOf(h, id, t);
    expect(waiting.status).toBe(delivery.EmailStatus.DEFERRED);

    sink = new SmtpSink();
    await startSinkOn(sink, port);
    const sent = await waitFor(async () => {
      const e = await statusOf(h!, id, t);
      return e.status === delivery.EmailStatus.SENT ? e : undefined;
    }, "sent once the relay is up");
    // At least 4, not 5: the fourth attempt may still have been connecting
    // when the relay came up, and then it is the one that sends.
    expect(sent.attempts).toBeGreaterThanOrEqual(4);
    await sleep(300);
    expect(sink.to("patient@example.com")).toHaveLength(1);
  });

  it("fails (not bounces) an email whose retry window ended with the relay unreachable", async () => {
    const port = await freePort();
    const local = await startHarness({
      store: "embedded",
      providers: smtpProviders(`smtp://127.0.0.1:${port}`),
      retry: { windowMs: 300 },
    });
    try {
      const t = tenant("live");
      local.templates.put(t, WELCOME);
      const { email } = await local.client.sendEmail({ templateSlug: "welcome", to: "late@example.com" }, as(t));
      const failed = await waitFor(async () => {
        const e = await statusOf(local, email!.id, t);
        return e.status === delivery.EmailStatus.FAILED ? e : undefined;
      }, "failed");
      // The connection error names a host and port: for operators (last_error), not for the API.
      expect(failed.error).toBe("relay_unavailable");
      expect(failed.bounce).toBeUndefined();
      const stored = await local.store.collection("emails").findOne({ _id: email!.id });
      expect(stored!.last_error).toMatch(/ECONNREFUSED|ESOCKET|ECONNECTION/);
    } finally {
      await local.close();
    }
  });
});

/** Starts the sink on a given port (the relay "appears" where the service already points). */
async function startSinkOn(sink: SmtpSink, port: number): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await sink.start(port);
      return;
    } catch (err) {
      if (i > 20) throw err;
      await sleep(50);
    }
  }
}

describe.each<StoreKind>(["embedded", "mongodb"])("a deferred email on %s storage", (kind) => {
  it("waits in the store across a restart, is not tried early by a stale send request, and is sent once when due", async () => {
    const sink = await new SmtpSink().start();
    // The first retry 1.5 s after the deferral, so that the restart and the stale request come before it.
    const h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), retry: { backoffMs: 1500, maxBackoffMs: 1500, windowMs: 60_000 } });
    try {
      const t = tenant("live");
      h.templates.put(t, WELCOME);
      sink.dataReplies.set("later@example.com", [{ code: 451, text: "4.3.0 try later" }]);
      const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "later@example.com", variables: { name: "L" } }, as(t));
      const id = email!.id;
      const deferred = await waitFor(async () => {
        const doc = await h.store.collection<EmailDoc>("emails").findOne({ _id: id });
        return doc?.status === "deferred" ? doc : undefined;
      }, "deferred");
      expect(deferred).toMatchObject({ attempts: 1, retry_requested: false, lease_until: 0 });

      // A send request for it arrives before it is due (an old one redelivered): the attempt finds it not due.
      await publishEvents(h.bus, [encodeEvent("email.send.requested", { eventId: newId("evt"), tenant: tenantKey(t.tenant), occurredAt: Date.now() }, { emailId: id })]);
      await h.service.close({ graceMs: 200 });
      await h.restart();
      const sent = await waitFor(async () => {
        const e = await statusOf(h, id, t);
        return e.status === delivery.EmailStatus.SENT ? e : undefined;
      }, "sent after the restart, when due");
      // One attempt refused, one that sent: the stale request tried nothing.
      expect(sent.attempts).toBe(2);
      expect(timestampMs(sent.sentAt!)).toBeGreaterThanOrEqual(deferred.next_attempt_at!);
      expect(sink.to("later@example.com").filter((m) => m.accepted)).toHaveLength(1);
      await sleep(300);
      expect(sink.to("later@example.com")).toHaveLength(2);
    } finally {
      await h.close();
      await sink.close();
    }
  });
});

describe.each<StoreKind>(["embedded", "mongodb"])("a campaign batch's leases on %s storage", (kind) => {
  // The intake stores a batch's records claimed with one token, and their leases are renewed together (LeaseGroup).
  const handOver = async (h: Harness, t: ReturnType<typeof tenant>, addresses: string[]) => {
    const key = tenantKey(t.tenant);
    const templateId = h.templates.put(t, WELCOME);
    const campaignId = newId("cmp");
    const ids = addresses.map(() => newId("eml"));
    await publishEvents(
      h.bus,
      addresses.map((address, i) =>
        encodeEvent(
          "email.send.requested",
          { eventId: newId("evt"), tenant: key, occurredAt: Date.now() },
          { emailId: ids[i]!, campaignId, subscriberId: h.subscribers.put(t, address, { name: "R" }), templateId, templateVersion: 1 },
        ),
      ),
    );
    return ids;
  };

  it("renews them together while the relay takes its time, a recipient waiting for its turn included, and sends each once", async () => {
    const sink = await new SmtpSink().start();
    const h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), leaseMs: 400, sendConcurrency: 1 });
    try {
      const t = tenant("live");
      sink.dataDelayMs = 1500;
      const addresses = ["slow1@example.com", "slow2@example.com", "slow3@example.com"];
      const dataIn = sink.nextData();
      const ids = await handOver(h, t, addresses);
      await dataIn;
      // Several leases into the first hand-off: every record of the batch is still held, the ones waiting their turn too.
      await sleep(1000);
      const emails = h.store.collection<EmailDoc>("emails");
      const now = Date.now();
      const queued = (await emails.find({ _id: { $in: ids }, status: "queued" })).map((doc) => ({ id: doc._id, held: doc.lease_until > now }));
      // One in the relay's hands, and at least one waiting for its turn.
      expect(queued.length).toBeGreaterThanOrEqual(2);
      expect(queued).toEqual(queued.map(({ id }) => ({ id, held: true })));
      for (const id of ids) {
        await waitFor(async () => ((await statusOf(h, id, t)).status === delivery.EmailStatus.SENT ? true : undefined), `${id} sent`, 20_000);
        expect((await statusOf(h, id, t)).attempts).toBe(1);
      }
      for (const address of addresses) expect(sink.to(address)).toHaveLength(1);
    } finally {
      await h.close();
      await sink.close();
    }
  });

  it("cuts off the send of an email whose lease another attempt took, writes nothing for it, and the email is sent once, by a later attempt", async () => {
    const sink = await new SmtpSink().start();
    const h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), leaseMs: 400 });
    try {
      const t = tenant("live");
      sink.dataDelayMs = 5000;
      const dataIn = sink.nextData();
      const [id] = await handOver(h, t, ["taken@example.com"]);
      await dataIn;
      // Another attempt claims the email (as one would once a lease ran out): the next renewal finds it gone.
      const emails = h.store.collection<EmailDoc>("emails");
      expect(await emails.updateOne({ _id: id!, status: "queued" }, { $set: { lease_token: "another-attempt", lease_until: Date.now() + 1500 }, $inc: { attempts: 1 } })).not.toBeNull();
      sink.dataDelayMs = 0;
      // Once that other lease has run out (it never sends), the redelivered request claims the email and sends it.
      await waitFor(async () => ((await statusOf(h, id!, t)).status === delivery.EmailStatus.SENT ? true : undefined), "sent by a later attempt", 20_000);
      expect((await statusOf(h, id!, t)).attempts).toBe(3);
      const copies = sink.to("taken@example.com");
      expect(copies.filter((m) => m.accepted)).toHaveLength(1);
      // The first hand-off was cut off before the relay's reply: never accepted.
      expect(copies.filter((m) => !m.accepted)).toHaveLength(1);
    } finally {
      await h.close();
      await sink.close();
    }
  });
});
