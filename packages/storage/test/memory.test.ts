// What a document costs the embedded store's heap (issue 20: the store keeps
// every document in memory). A document the store copied one computed key at
// a time (its insert's clean copy, NeDB's modify for $push or $unset) had its
// fields in a hash table once it had more than about 20 of them: an email
// record's 30 fields took about 1.5 KB that way, most of delivery's heap
// after a 100,000-recipient campaign. Stored documents now keep their fields
// inline (checks.ts, withFastFields). Counts bytes after a full collection;
// not timed.
//
// On disk, documents at rest stay in the datafile (at-rest.ts): the heap then
// holds per document only what finds it (its `_id` string, its slot's entries
// in typed arrays, the `_id` table's, the order's and the unique index's
// entries: slots.ts) and a bounded cache of decoded documents.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { openEmbeddedStore, type AnyDoc, type Collection } from "../src/index.js";

const N = 20_000;
/**
 * Heap bytes a stored 30-field document may take, its strings and the store's
 * bookkeeping (id table, order, one unique index) included: 506 once inserted
 * and 707 after the updates below (640 and 810 with a slot object, a Map entry
 * per id and per unique key), where fields in a hash table took 2,080 and
 * 2,190 (and 2,170 after the updates when a `$set` adding fields left them so).
 */
const MAX_BYTES_PER_DOCUMENT = 760;

function collect(): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
}

async function heapUsed(): Promise<number> {
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  return getHeapStatistics().used_heap_size;
}

/** A record of 30 fields, as an email record has: a few strings, the rest numbers and flags. */
function record(i: number): AnyDoc {
  const doc: Record<string, unknown> = { _id: `eml_${String(i).padStart(8, "0")}`, tenant: "acc_1:test", idem_key: `none:${i}`, status: "queued", outbox: [{ topic: "email.queued", at: i }] };
  // Five named fields, then 25 more.
  for (let f = 5; f < 30; f += 1) doc[`field_${f}`] = f % 3 === 0 ? f === 9 : i + f;
  return doc as AnyDoc;
}

describe("a stored document's heap cost (embedded store, in memory)", () => {
  let collection: Collection<AnyDoc>;
  let before: number;

  beforeAll(async () => {
    before = await heapUsed();
    const store = await openEmbeddedStore({});
    collection = store.collection("emails");
    await collection.createIndexes([{ name: "idem", fields: { tenant: 1, idem_key: 1 }, unique: true }]);
    for (let i = 0; i < N; i += 1000) await collection.insertMany(Array.from({ length: 1000 }, (_, k) => record(i + k)));
  });

  const perDocument = async () => (await heapUsed() - before) / N;

  it("stays small once inserted", async () => {
    expect(await collection.count({})).toBe(N);
    expect(await perDocument()).toBeLessThan(MAX_BYTES_PER_DOCUMENT);
  });

  it("stays small after updates NeDB's modify applies ($push, $unset) and after shallow ones ($set, $inc), adding fields too", async () => {
    for (let i = 0; i < N; i += 1) {
      const _id = `eml_${String(i).padStart(8, "0")}`;
      await collection.updateOne({ _id }, { $set: { status: "sent", field_7: i } });
      await collection.updateOne({ _id }, { $push: { outbox: { $each: [{ topic: "email.sent", at: i }] } } });
      await collection.updateOne({ _id }, { $unset: { field_8: true } });
      // Fields the document lacked (an email's send sets its message id): a copy assigned them by computed
      // keys kept its fields in a hash table (about 1.5 KB more per document) until spread again.
      await collection.updateOne({ _id }, { $set: { message_id: `<${i}@example.com>`, sent_at: i }, $inc: { attempts: 1 } });
    }
    expect(await collection.count({ status: "sent" })).toBe(N);
    expect(await perDocument()).toBeLessThan(MAX_BYTES_PER_DOCUMENT);
  });
});

/** Documents of the on-disk test: the heap must not grow with them. */
const N_AT_REST = 100_000;
/**
 * Heap bytes a document at rest may take, with the cache's share (about 20 B
 * here): its `_id` string (32 B), its entries in the slots' arrays (2 × 8 B
 * for the id and the decoded document, 17 B of typed arrays: offset, length,
 * version, flags), the `_id` table's and the unique index's (8 B each, tables
 * half to three quarters full), the ordered view's (8 B). Measured 77-82;
 * 205-210 with a slot object (72 B) and Map entries for the `_id` and the
 * unique key's hash (about 35 B each); the same document decoded takes 506
 * (above).
 */
const MAX_BYTES_PER_DOCUMENT_AT_REST = 100;
/** The cache's budget here: 2 MB of lines, about 2,600 of these documents. */
const CACHE_BYTES = 2 * 1024 * 1024;

describe("documents at rest (embedded store on disk, 100,000 documents, a 2 MB cache)", () => {
  let dir: string;
  let collection: Collection<AnyDoc>;
  let close: () => Promise<void>;
  let before: number;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "emailsvc-at-rest-"));
    before = await heapUsed();
    const store = await openEmbeddedStore({ dataDir: dir, cacheBytes: CACHE_BYTES });
    close = () => store.close();
    collection = store.collection("emails");
    await collection.createIndexes([{ name: "idem", fields: { tenant: 1, idem_key: 1 }, unique: true }]);
    for (let i = 0; i < N_AT_REST; i += 1000) await collection.insertMany(Array.from({ length: 1000 }, (_, k) => record(i + k)));
  });

  afterAll(async () => {
    await close();
    await rm(dir, { recursive: true, force: true });
  });

  const perDocument = async () => (await heapUsed() - before) / N_AT_REST;

  it("holds per document only what finds it once written", async () => {
    expect(await collection.count({})).toBe(N_AT_REST);
    expect(await perDocument()).toBeLessThan(MAX_BYTES_PER_DOCUMENT_AT_REST);
  });

  it("stays within that bound after every document was read and half of them updated: the cache is bounded", async () => {
    for (let i = 0; i < N_AT_REST; i += 1) {
      const _id = `eml_${String(i).padStart(8, "0")}`;
      const doc = await collection.findOne({ _id });
      expect(doc?.idem_key).toBe(`none:${i}`);
      if (i % 2 === 0) await collection.updateOne({ _id }, { $set: { status: "sent" }, $push: { outbox: { $each: [{ topic: "email.sent", at: i }] } } });
    }
    // A scan of a field no index serves reads every document from its line.
    expect(await collection.count({ status: "sent" })).toBe(N_AT_REST / 2);
    expect(await perDocument()).toBeLessThan(MAX_BYTES_PER_DOCUMENT_AT_REST);
  });
});
