import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InProcessEventBus, decodeEvent, type EventBus, type OutgoingEvent, type ReceivedEvent } from "@emailsvc/events";
import { newId } from "@emailsvc/runtime";
import { AcrossTenants, openEmbeddedStore, openMongoStore, type Collection, type DocumentStore } from "@emailsvc/storage";
import { Outbox, outboxWrites, type OutboxDoc, type OutboxEntry } from "../src/index.js";

// The outbox kit on both storage adapters: the embedded store, and the real
// MongoDB-compatible server Jest's global setup provides (MONGO_URL).

type StoreKind = "embedded" | "mongodb";

interface NoteEntry extends OutboxEntry {
  kind: "created" | "retagged" | "deleted";
}

/** A document with an outbox, shaped like a subscriber (its events are subscriber.* ones). */
interface NoteDoc extends OutboxDoc<NoteEntry> {
  text: string;
  deleted: boolean;
}

const writes = outboxWrites<NoteDoc>();

/** A real in-process bus behind a door that can fail or pause a publish. */
class Door implements EventBus {
  calls: Array<{ topic: string; events: OutgoingEvent[] }> = [];
  down = false;
  /** Runs (once) at the start of the next publish, before it goes through. */
  onPublish: (() => Promise<void>) | undefined;

  constructor(readonly inner: InProcessEventBus) {}

  async publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    const hook = this.onPublish;
    this.onPublish = undefined;
    if (hook) await hook();
    if (this.down) throw new Error("bus unavailable");
    this.calls.push({ topic, events });
    await this.inner.publish(topic, events);
  }
  subscribe: EventBus["subscribe"] = (options) => this.inner.subscribe(options);
  ensureTopics: EventBus["ensureTopics"] = (topics) => this.inner.ensureTopics(topics);
  close: EventBus["close"] = () => this.inner.close();
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function openStore(kind: StoreKind): Promise<{ store: DocumentStore; cleanup: () => void }> {
  if (kind === "mongodb") {
    const url = process.env.MONGO_URL;
    if (!url) throw new Error("MONGO_URL is not set: run the tests through `npm test`, whose setup starts FerretDB");
    return { store: await openMongoStore({ url, dbName: `outbox_test_${newId("db").slice(3, 20)}` }), cleanup: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), "outbox-test-"));
  return { store: await openEmbeddedStore({ dataDir: dir }), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

describe.each<StoreKind>(["embedded", "mongodb"])("outbox kit on %s storage", (kind) => {
  let store: DocumentStore;
  let cleanup: () => void;
  let notes: Collection<NoteDoc>;
  let inner: InProcessEventBus;
  let bus: Door;
  let arrived: ReceivedEvent[];
  let effects: string[];
  let now: number;
  let warnings: Array<{ fields: Record<string, unknown>; message: string }>;
  let outbox: Outbox<NoteDoc>;
  const tenant = `${newId("acc")}:live`;

  beforeAll(async () => {
    ({ store, cleanup } = await openStore(kind));
  });
  afterAll(async () => {
    await store.close();
    cleanup();
  });

  beforeEach(async () => {
    notes = store.collection<NoteDoc>(`notes_${newId("c").slice(-8)}`);
    await notes.createIndexes([{ name: "outbox_pending", fields: { outbox_pending: 1, updated_at: 1 } }]);
    inner = new InProcessEventBus({ logger: () => {} });
    await inner.ensureTopics(["subscriber.created", "subscriber.tag_added", "subscriber.deleted"]);
    arrived = [];
    await inner.subscribe({
      group: "observer",
      topics: ["subscriber.created", "subscriber.tag_added", "subscriber.deleted"],
      handler: async (event) => void arrived.push(event),
    });
    bus = new Door(inner);
    effects = [];
    warnings = [];
    now = 1_000_000;
    outbox = makeOutbox();
  });
  afterEach(async () => {
    await outbox.stop();
    await inner.close();
  });

  function makeOutbox(options: { deleteTombstones?: boolean } = {}): Outbox<NoteDoc> {
    return new Outbox<NoteDoc>({
      documents: new AcrossTenants(notes, "the kit's tests sweep every tenant"),
      bus,
      logger: { warn: (fields, message) => void warnings.push({ fields, message }) },
      clock: () => now,
      sweepIntervalMs: 20,
      sweepGraceMs: 5000,
      event: (entry, doc) =>
        entry.kind === "created"
          ? { topic: "subscriber.created", body: { subscriberId: doc._id } }
          : entry.kind === "retagged"
            ? { topic: "subscriber.tag_added", body: { subscriberId: doc._id, tagId: "tag_x" } }
            : { topic: "subscriber.deleted", body: { subscriberId: doc._id } },
      effect: async (entry) => void effects.push(entry.id),
      ...(options.deleteTombstones ? { complete: async (doc: NoteDoc) => (doc.deleted ? ("delete" as const) : ("clear" as const)) } : {}),
    });
  }

  const entry = (kind: NoteEntry["kind"]): NoteEntry => ({ id: newId("evt"), at: now, kind });

  /** Inserts a note whose creation implies `entries`; returns it as stored. */
  async function create(entries: NoteEntry[]): Promise<NoteDoc> {
    const doc: NoteDoc = { _id: newId("sub"), tenant, text: "hello", deleted: false, updated_at: now, ...writes.created(entries) };
    await notes.insertOne(doc);
    return doc;
  }

  /** A change of the note that implies `entries`, in one write. */
  async function change(id: string, entries: NoteEntry[], set: { text?: string; deleted?: boolean } = {}): Promise<NoteDoc> {
    const doc = await notes.updateOne({ _id: id }, writes.appended({ $set: set }, entries, now));
    if (!doc) throw new Error("no such note");
    return doc;
  }

  const eventIds = (topic?: string) =>
    arrived.filter((e) => topic === undefined || e.topic === topic).map((e) => e.headers["event-id"]);

  it("carries out a change's entries right after its write: effects, one batch per topic in entry order, then the clear", async () => {
    const entries = [entry("created"), entry("retagged"), entry("retagged")];
    const doc = await create(entries);
    expect(await outbox.backlog()).toBe(1);

    await outbox.afterWrite(doc);
    expect(effects).toEqual(entries.map((e) => e.id));
    expect(bus.calls.map((c) => [c.topic, c.events.length])).toEqual([
      ["subscriber.created", 1],
      ["subscriber.tag_added", 2],
    ]);
    expect(await notes.findOne({ _id: doc._id })).toMatchObject({ outbox: [], outbox_pending: false, version: 1, text: "hello" });
    expect(await outbox.backlog()).toBe(0);

    await until(() => arrived.length === 3, "three events");
    // Each event carries its entry's id and the document's tenant, keyed by the document.
    expect(eventIds()).toEqual(expect.arrayContaining(entries.map((e) => e.id)));
    const created = decodeEvent("subscriber.created", arrived.find((e) => e.topic === "subscriber.created")!);
    expect(created.ok && created.meta).toMatchObject({ tenant, key: doc._id, eventId: entries[0]!.id, occurredAt: now });
  });

  it("loses nothing to a bus outage: the change stays pending, and the sweep finishes it once the bus is back", async () => {
    bus.down = true;
    const doc = await create([entry("created")]);
    await outbox.afterWrite(doc); // resolves: the change is stored, its effects wait
    expect(warnings.map((w) => w.message)).toEqual(["outbox flush failed; the sweep will finish it"]);
    expect(warnings[0]!.fields).toEqual({ doc_id: doc._id, error: "Error: bus unavailable" });
    expect(await outbox.backlog()).toBe(1);
    expect(await notes.findOne({ _id: doc._id })).toMatchObject({ outbox_pending: true, outbox: doc.outbox });

    bus.down = false;
    // Younger than the grace: left to the write's own flush (the injected clock decides).
    expect(await outbox.sweep()).toBe(0);
    now += 6000;
    expect(await outbox.sweep()).toBe(1);
    expect(await outbox.backlog()).toBe(0);
    await until(() => arrived.length === 1, "the event after the outage");
    expect(eventIds()).toEqual([doc.outbox[0]!.id]);
    // The effect ran before the outage and again after: effects may repeat, so they must be idempotent.
    expect(effects).toEqual([doc.outbox[0]!.id, doc.outbox[0]!.id]);
  });

  it("runs one flush per document at a time; one that waited reads the document again, so a stale copy repeats nothing", async () => {
    const first = await create([entry("created")]);
    const later = entry("retagged");
    let stale: Promise<void> | undefined;
    // While the first flush publishes, the document changes and a flush of the stale first copy is asked for.
    bus.onPublish = async () => {
      await change(first._id, [later], { text: "changed" });
      stale = outbox.flush(first);
    };
    await outbox.flush(first);
    await stale;
    await until(() => arrived.length === 2, "both events");
    // The first flush's clear missed (the version moved): it read the document again and did only the new entry.
    expect(eventIds("subscriber.created")).toEqual([first.outbox[0]!.id]);
    expect(eventIds("subscriber.tag_added")).toEqual([later.id]);
    expect(effects).toEqual([first.outbox[0]!.id, later.id]);
    expect(await notes.findOne({ _id: first._id })).toMatchObject({ outbox: [], outbox_pending: false, version: 2, text: "changed" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(arrived).toHaveLength(2);
  });

  it("deletes a document whose completion says so (a tombstone), once its entries are done", async () => {
    await outbox.stop();
    outbox = makeOutbox({ deleteTombstones: true });
    const doc = await create([entry("created")]);
    await outbox.afterWrite(doc);
    expect(await notes.findOne({ _id: doc._id })).toMatchObject({ outbox_pending: false });
    const tombstone = await change(doc._id, [entry("deleted")], { deleted: true, text: "" });
    await outbox.afterWrite(tombstone);
    expect(await notes.findOne({ _id: doc._id })).toBeNull();
    await until(() => arrived.length === 2, "created and deleted");
    expect(eventIds("subscriber.deleted")).toEqual([tombstone.outbox[0]!.id]);
  });

  it("sweeps periodically once started, and counts the backlog across tenants", async () => {
    bus.down = true;
    const other = `${newId("acc")}:test`;
    const a = await create([entry("created")]);
    const b: NoteDoc = { _id: newId("sub"), tenant: other, text: "x", deleted: false, updated_at: now, ...writes.created([entry("created")]) };
    await notes.insertOne(b);
    await outbox.afterWrite(a);
    await outbox.afterWrite(b);
    expect(await outbox.backlog()).toBe(2);
    bus.down = false;
    now += 10_000;
    outbox.start();
    await until(async () => (await outbox.backlog()) === 0, "the periodic sweep");
    await until(() => arrived.length === 2, "both tenants' events");
    const tenants = arrived.map((e) => {
      const decoded = decodeEvent("subscriber.created", e);
      return decoded.ok ? decoded.meta.tenant : "";
    });
    expect(tenants.sort()).toEqual([tenant, other].sort());
  });
});
