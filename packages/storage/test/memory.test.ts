// What a document costs the embedded store's heap (issue 20: the store keeps
// every document in memory). A document the store copied one computed key at
// a time (its insert's clean copy, NeDB's modify for $push or $unset) had its
// fields in a hash table once it had more than about 20 of them: an email
// record's 30 fields took about 1.5 KB that way, most of delivery's heap
// after a 100,000-recipient campaign. Stored documents now keep their fields
// inline (checks.ts, withFastFields). Counts bytes after a full collection;
// not timed.

import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { openEmbeddedStore, type AnyDoc, type Collection } from "../src/index.js";

const N = 20_000;
/**
 * Heap bytes a stored 30-field document may take, its strings and the store's
 * bookkeeping (id map, order, one unique index) included: 750 once inserted
 * and 860 after the updates below, where fields in a hash table took 2,080 and 2,190.
 */
const MAX_BYTES_PER_DOCUMENT = 1_000;

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

  it("stays small after updates NeDB's modify applies ($push, $unset) and after shallow ones ($set)", async () => {
    for (let i = 0; i < N; i += 1) {
      const _id = `eml_${String(i).padStart(8, "0")}`;
      await collection.updateOne({ _id }, { $set: { status: "sent", field_7: i } });
      await collection.updateOne({ _id }, { $push: { outbox: { $each: [{ topic: "email.sent", at: i }] } } });
      await collection.updateOne({ _id }, { $unset: { field_8: true } });
    }
    expect(await collection.count({ status: "sent" })).toBe(N);
    expect(await perDocument()).toBeLessThan(MAX_BYTES_PER_DOCUMENT);
  });
});
