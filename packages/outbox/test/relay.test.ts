import { fromBinary } from "@bufbuild/protobuf";
import { encodeEvent, InProcessEventBus, type EventBus, type OutgoingEvent, type ReceivedEvent } from "@emailsvc/events";
import { events } from "@emailsvc/proto";
import { newId } from "@emailsvc/ids";
import { CrossTenantCollection, type DocumentStore, type TenantCollection } from "@emailsvc/storage";
import { openTestStore, waitFor, type StoreKind } from "@emailsvc/testing";
import { newOutbox, OUTBOX_INDEX, OutboxRelay, withOutbox, type OutboxDoc, type OutboxEntry, type OutboxRelayOptions } from "../src/index.js";

// The outbox kit against both storage adapters (the embedded store and the
// MongoDB-compatible server of MONGO_URL) with a real in-process bus: what it
// promises is that effects may repeat but are never lost.

interface NoteEntry extends OutboxEntry {
  status: string;
}
interface NoteDoc extends OutboxDoc<NoteEntry> {
  body: string;
  deleted: boolean;
}

/** A bus that can be taken down: publish rejects while `down`. */
class FlakyBus {
  down = false;
  published = 0;
  constructor(readonly inner: EventBus) {}
  readonly bus: EventBus = {
    publish: async (topic: string, list: OutgoingEvent[]) => {
      if (this.down) throw new Error("bus unavailable");
      this.published += 1;
      await this.inner.publish(topic, list);
    },
    subscribe: (o) => this.inner.subscribe(o),
    ensureTopics: (t) => this.inner.ensureTopics(t),
    lag: (g, t) => this.inner.lag(g, t),
    close: () => this.inner.close(),
  };
}

const entry = (status: string, at = 0): NoteEntry => ({ id: newId("evt"), at, status });

describe.each<StoreKind>(["embedded", "mongodb"])("outbox kit on %s storage", (kind) => {
  let store: DocumentStore;
  let cleanup: () => void;
  let bus: InProcessEventBus;
  let flaky: FlakyBus;
  let received: ReceivedEvent[];
  let now: number;
  let notes: CrossTenantCollection<NoteDoc>;
  let effects: string[];
  const relays: Array<OutboxRelay<NoteDoc>> = [];

  beforeAll(async () => {
    ({ store, cleanup } = await openTestStore(kind, "outbox"));
    bus = new InProcessEventBus({ logger: () => {} });
    flaky = new FlakyBus(bus);
    await bus.ensureTopics(["email.status", "email.send.requested"]);
    received = [];
    await bus.subscribe({ group: "observer", topics: ["email.status", "email.send.requested"], handler: async (e) => void received.push(e) });
    const raw = store.collection<NoteDoc>(`notes_${newId("c").slice(2, 12)}`);
    await raw.createIndexes([OUTBOX_INDEX]);
    notes = new CrossTenantCollection(raw, "tests of the outbox kit: every tenant's notes");
  });
  afterAll(async () => {
    for (const relay of relays) await relay.stop();
    await bus.close();
    await store.close();
    cleanup();
  });
  beforeEach(() => {
    now = 1_000_000;
    effects = [];
  });

  function relayOf(options: Partial<OutboxRelayOptions<NoteDoc, NoteEntry>> = {}): OutboxRelay<NoteDoc> {
    const relay = new OutboxRelay<NoteDoc>({
      documents: notes,
      bus: flaky.bus,
      logger: { warn: () => {} },
      name: "notes",
      clock: () => now,
      events: (doc, e) => [encodeEvent("email.status", { eventId: e.id, tenant: doc.tenant, occurredAt: e.at }, { emailId: doc._id, status: e.status })],
      effect: async (_doc, e) => void effects.push(e.id),
      sweepGraceMs: 5000,
      ...options,
    });
    relays.push(relay);
    return relay;
  }

  async function insert(tenant: string, entries: NoteEntry[], updatedAt = now): Promise<NoteDoc> {
    const doc = { _id: newId("eml"), body: "b", deleted: false, updated_at: updatedAt, ...newOutbox(entries) };
    await notes.forTenant(tenant).insertOne(doc);
    return { ...doc, tenant };
  }

  const statusesOf = (id: string) =>
    received.filter((e) => e.key === id).map((e) => fromBinary(events.EmailStatusChangedSchema, e.value).status);
  const settle = () => new Promise((r) => setTimeout(r, 50));
  const tenant = () => `${newId("acc")}:test`;

  it("carries out an outbox right after the write: effects, events with ids and headers, then clears it guarded by version", async () => {
    const relay = relayOf();
    const t = tenant();
    const first = entry("queued", 5);
    const doc = await insert(t, [first, entry("sent", 6)]);
    await relay.flush(doc);
    await until(() => statusesOf(doc._id).length === 2);
    expect(statusesOf(doc._id)).toEqual(["queued", "sent"]);
    const event = received.find((e) => e.key === doc._id)!;
    expect(event.headers).toEqual({ "event-id": first.id, "event-type": "email.status" });
    const meta = fromBinary(events.EmailStatusChangedSchema, event.value).meta!;
    expect(`${meta.accountId}:${meta.mode}`).toBe(t);
    expect(effects).toEqual(doc.outbox.map((e) => e.id));
    const stored = (await notes.forTenant(t).findOne({ _id: doc._id }))!;
    expect(stored.outbox).toEqual([]);
    expect(stored.outbox_pending).toBe(false);
    expect(flaky.published).toBeGreaterThan(0);
  });

  it("batches one flush's events per topic", async () => {
    const calls: string[] = [];
    const counting: EventBus = { ...flaky.bus, publish: async (topic, list) => void calls.push(`${topic}:${list.length}`) };
    const relay = relayOf({
      bus: counting,
      topicOrder: ["email.send.requested"],
      events: (doc, e) => [
        encodeEvent("email.status", { eventId: e.id, tenant: doc.tenant, occurredAt: e.at }, { emailId: doc._id, status: e.status }),
        encodeEvent("email.send.requested", { eventId: `${e.id}r`, tenant: doc.tenant, occurredAt: e.at }, { emailId: doc._id }),
      ],
    });
    await relay.flush(await insert(tenant(), [entry("a"), entry("b"), entry("c")]));
    expect(calls).toEqual(["email.send.requested:3", "email.status:3"]);
  });

  it("carries out the outboxes of many documents one write stored in one publish per topic, and clears them all", async () => {
    const calls: string[] = [];
    const counting: EventBus = { ...flaky.bus, publish: async (topic, list) => (calls.push(`${topic}:${list.length}`), flaky.bus.publish(topic, list)) };
    const relay = relayOf({ bus: counting });
    const t = tenant();
    const docs = await Promise.all(Array.from({ length: 5 }, (_, i) => insert(t, [entry(`queued ${i}`), entry(`held ${i}`)])));
    await relay.afterWriteMany(docs);
    expect(calls).toEqual(["email.status:10"]);
    await until(() => docs.every((d) => statusesOf(d._id).length === 2));
    expect(effects).toHaveLength(10);
    for (const d of docs) expect((await notes.forTenant(t).findOne({ _id: d._id }))!.outbox_pending).toBe(false);
  });

  it("flushes a document of the many that changed meanwhile on its own: its new entries go out too, nothing is left pending", async () => {
    const relay = relayOf();
    const t = tenant();
    const docs = await Promise.all([insert(t, [entry("a")]), insert(t, [entry("b")]), insert(t, [entry("c")])]);
    // Another write appends to the second one (a new version) before the flush clears them.
    await notes.forTenant(t).updateOne({ _id: docs[1]!._id }, withOutbox<NoteDoc, NoteEntry>({ $set: { body: "changed" } }, [entry("b2")], now));
    await relay.afterWriteMany(docs);
    await until(() => statusesOf(docs[1]!._id).includes("b2"));
    expect(statusesOf(docs[0]!._id)).toEqual(["a"]);
    expect(statusesOf(docs[2]!._id)).toEqual(["c"]);
    // "b" may go out twice (with its one event id, which consumers drop), never be lost.
    expect(new Set(statusesOf(docs[1]!._id))).toEqual(new Set(["b", "b2"]));
    for (const d of docs) expect((await notes.forTenant(t).findOne({ _id: d._id }))!.outbox_pending).toBe(false);
  });

  it("leaves many documents to the sweep when the bus is down: nothing lost, the call never fails", async () => {
    const relay = relayOf();
    const t = tenant();
    const docs = await Promise.all([insert(t, [entry("x")]), insert(t, [entry("y")])]);
    flaky.down = true;
    try {
      await expect(relay.afterWriteMany(docs)).resolves.toBeUndefined();
    } finally {
      flaky.down = false;
    }
    for (const d of docs) expect((await notes.forTenant(t).findOne({ _id: d._id }))!.outbox_pending).toBe(true);
    now += 10_000;
    await relay.sweep();
    await until(() => docs.every((d) => statusesOf(d._id).length === 1));
  });

  it("runs a service's batched effect once for the many, and publishes once per topic", async () => {
    const calls: string[] = [];
    const counting: EventBus = { ...flaky.bus, publish: async (topic, list) => void calls.push(`${topic}:${list.length}`) };
    const batches: number[] = [];
    const relay = relayOf({ bus: counting, effects: async (items) => void batches.push(items.length) });
    const t = tenant();
    const docs = [await insert(t, [entry("a")]), await insert(t, [entry("b"), entry("c")]), await insert(t, [entry("d")])];
    await relay.afterWriteMany(docs);
    expect(batches).toEqual([4]);
    expect(calls).toEqual(["email.status:4"]);
    const stored = await notes.forTenant(t).find({ _id: { $in: docs.map((d) => d._id) } });
    expect(stored.map((d) => d.outbox_pending)).toEqual([false, false, false]);
  });

  it("carryOut runs the effects and events of entries kept outside an outbox, and rejects when the bus is down", async () => {
    const relay = relayOf();
    const t = tenant();
    const doc = await insert(t, []);
    const kept = [entry("x"), entry("y")];
    await relay.carryOut(kept.map((e) => ({ doc, entry: e })));
    await until(() => statusesOf(doc._id).length === 2);
    expect(effects).toEqual(kept.map((e) => e.id));
    flaky.down = true;
    try {
      await expect(relay.carryOut([{ doc, entry: entry("z") }])).rejects.toThrow("bus unavailable");
    } finally {
      flaky.down = false;
    }
  });

  it("goes on with a concurrent change's new entries only, each once", async () => {
    const t = tenant();
    const doc = await insert(t, [entry("one")]);
    let raced = false;
    const relay = relayOf({
      effect: async (_d, e) => {
        effects.push(e.id);
        if (raced) return;
        raced = true;
        // Another request changes the document while its outbox is being carried out.
        await notes.forTenant(t).updateOne({ _id: doc._id }, withOutbox<NoteDoc, NoteEntry>({ $set: { body: "c" } }, [entry("two")], now));
      },
    });
    await relay.flush(doc);
    await until(() => statusesOf(doc._id).length === 2);
    await settle();
    expect(statusesOf(doc._id)).toEqual(["one", "two"]);
    expect(effects).toHaveLength(2);
    expect((await notes.forTenant(t).findOne({ _id: doc._id }))!.outbox_pending).toBe(false);
  });

  it("runs flushes of one document one at a time; one that waited reads the document again and repeats nothing", async () => {
    const relay = relayOf();
    const doc = await insert(tenant(), [entry("only")]);
    await Promise.all([relay.flush(doc), relay.flush(doc), relay.flush(doc)]);
    await settle();
    expect(statusesOf(doc._id)).toEqual(["only"]);
    expect(effects).toHaveLength(1);
  });

  it("loses nothing to a bus outage: the flush fails, the document stays pending, the sweep carries it out later", async () => {
    const relay = relayOf();
    const t = tenant();
    const doc = await insert(t, [entry("queued")]);
    flaky.down = true;
    try {
      await expect(relay.flush(doc)).rejects.toThrow("bus unavailable");
      // What a use case calls after its write never fails the request: the change is done, the sweep finishes it.
      await expect(relay.afterWrite(doc)).resolves.toBeUndefined();
      expect((await notes.forTenant(t).findOne({ _id: doc._id }))!.outbox_pending).toBe(true);
      now += 10_000;
      await relay.sweep();
      expect(statusesOf(doc._id)).toEqual([]);
    } finally {
      flaky.down = false;
    }
    now += 10_000;
    expect(await relay.sweep()).toBeGreaterThanOrEqual(1);
    await until(() => statusesOf(doc._id).length === 1);
    expect((await notes.forTenant(t).findOne({ _id: doc._id }))!.outbox_pending).toBe(false);
    // The effect ran before each publish attempt: it may repeat (idempotent by entry id), never be lost.
    expect(effects.length).toBeGreaterThanOrEqual(2);
    expect(new Set(effects)).toEqual(new Set([doc.outbox[0]!.id]));
  });

  it("sweeps outboxes a crash left, of every tenant, older than the grace by the injected clock", async () => {
    const relay = relayOf();
    const [a, b] = [tenant(), tenant()];
    const old = await insert(a, [entry("left")], now - 60_000);
    const other = await insert(b, [entry("left too")], now - 60_000);
    const young = await insert(a, [entry("in hand")], now - 1000);
    expect(await relay.pending()).toBeGreaterThanOrEqual(3);
    await relay.sweep();
    await until(() => statusesOf(old._id).length === 1 && statusesOf(other._id).length === 1);
    expect(statusesOf(young._id)).toEqual([]);
    expect((await notes.forTenant(a).findOne({ _id: young._id }))!.outbox_pending).toBe(true);
    now += 5000;
    await relay.sweep();
    await until(() => statusesOf(young._id).length === 1);
    expect(await relay.pending()).toBe(0);
  });

  it("lets a service end the outbox its own way (a tombstone deleted, guarded by version)", async () => {
    const complete = async (doc: NoteDoc, documents: TenantCollection<NoteDoc>) => {
      if (!doc.deleted) return (await documents.updateOne({ _id: doc._id, version: doc.version }, { $set: { outbox: [], outbox_pending: false } })) !== null;
      return documents.deleteOne({ _id: doc._id, version: doc.version });
    };
    const relay = relayOf({ complete });
    const t = tenant();
    const doc = await insert(t, [entry("created")]);
    await relay.flush(doc);
    const gone = await notes.forTenant(t).updateOne({ _id: doc._id }, withOutbox<NoteDoc, NoteEntry>({ $set: { deleted: true, body: "" } }, [entry("deleted")], now));
    await relay.flush(gone!);
    await until(() => statusesOf(doc._id).length === 2);
    expect(statusesOf(doc._id)).toEqual(["created", "deleted"]);
    expect(await notes.forTenant(t).count({ _id: doc._id })).toBe(0);
  });

  it("runs the sweep and the service's passes periodically until stopped", async () => {
    let passes = 0;
    const relay = relayOf({ sweepIntervalMs: 10, passes: [{ name: "count", run: async () => void passes++ }] });
    const doc = await insert(tenant(), [entry("swept")], now - 60_000);
    relay.start();
    await until(() => statusesOf(doc._id).length === 1 && passes >= 2);
    await relay.stop();
    const after = passes;
    await new Promise((r) => setTimeout(r, 50));
    expect(passes).toBe(after);
  });
});

/** Until `condition` holds (the kit's waitFor over a boolean). */
const until = (condition: () => boolean): Promise<true> => waitFor(() => (condition() ? true : undefined), "the outbox to be carried out", 10_000);
