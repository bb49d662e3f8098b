// The embedded store's per-document bookkeeping in typed arrays (slots.ts):
// the hash tables of `_id`s and unique keys, the posting lists of shared index
// keys (a sorted list, a bitmap once most slots share a key), and slot numbers
// reused after removals. Each structure is checked against a plain model
// (Map, Set) through random operations; the store's answers over them are
// checked against a model of the writes, through compactions and a reopening.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openEmbeddedStore, type AnyDoc } from "../src/index.js";
import { DocCache } from "../src/at-rest.js";
import { MemoryTable } from "../src/memory-table.js";
import { HashSlots, IN_CACHE, Posting, QUEUED, SlotArrays } from "../src/slots.js";

/** A repeatable pseudo-random source (xorshift32). */
function randomSource(seed: number): (n: number) => number {
  let state = seed | 1;
  return (n) => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % n;
  };
}

/** Every slot HashSlots holds under `hash`. */
function slotsUnder(table: HashSlots, hash: number): number[] {
  const found: number[] = [];
  for (let at = table.first(hash); at >= 0; at = table.next(hash, at)) found.push(table.slotAt(at));
  return found.sort((a, b) => a - b);
}

test("HashSlots holds every (hash, slot) added and not deleted, many slots under few hashes, through growth and deletions", () => {
  const random = randomSource(11);
  const table = new HashSlots();
  const model = new Map<number, Set<number>>();
  // 40 hashes for up to 5,000 slots: long runs of entries sharing a hash, and tombstones among them.
  const hashes = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? -1 - i * 7919 : i * 104729));
  for (let step = 0; step < 20_000; step += 1) {
    const hash = hashes[random(hashes.length)]!;
    const slot = random(5000);
    const held = model.get(hash) ?? new Set<number>();
    if (random(3) === 0) {
      table.delete(hash, slot);
      held.delete(slot);
    } else if (!held.has(slot)) {
      table.add(hash, slot);
      held.add(slot);
    }
    model.set(hash, held);
  }
  let total = 0;
  for (const hash of hashes) {
    const expected = [...(model.get(hash) ?? [])].sort((a, b) => a - b);
    expect(slotsUnder(table, hash)).toEqual(expected);
    expect(table.count(hash)).toBe(expected.length);
    total += expected.length;
  }
  expect(table.size).toBe(total);
  // A hash never added: nothing, and deleting under it changes nothing.
  expect(slotsUnder(table, 123_456_789)).toEqual([]);
  table.delete(123_456_789, 1);
  expect(table.size).toBe(total);
  // Emptied but for one hash's slots: the table shrinks, and still holds them.
  const grown = table.capacity;
  const kept = hashes[0]!;
  for (const hash of hashes.slice(1)) for (const slot of model.get(hash) ?? []) table.delete(hash, slot);
  expect(table.size).toBe(model.get(kept)?.size ?? 0);
  expect(table.capacity).toBeLessThan(grown / 4);
  expect(slotsUnder(table, kept)).toEqual([...(model.get(kept) ?? [])].sort((a, b) => a - b));
});

test("a Posting answers its slots in ascending order as a list, as a bitmap once most slots share its key, and as a list again", () => {
  const random = randomSource(5);
  const limit = 20_000;
  const model = new Set<number>([3, 1]);
  const posting = new Posting(3, 1);
  const check = (): void => {
    expect(posting.size).toBe(model.size);
    expect([...posting.slots()]).toEqual([...model].sort((a, b) => a - b));
  };
  check();
  expect(posting.isBitmap).toBe(false);
  // Most slots join: past 1 in 32 of the slot numbers, a bitmap.
  for (let i = 0; i < 15_000; i += 1) {
    const slot = random(limit);
    expect(posting.add(slot, limit)).toBe(!model.has(slot));
    model.add(slot);
  }
  check();
  expect(posting.isBitmap).toBe(true);
  // Slot numbers past the bitmap's end (the collection grew) still join.
  for (const slot of [limit, limit + 31, limit + 5000]) {
    posting.add(slot, limit + 5001);
    model.add(slot);
  }
  check();
  // Nearly all leave again: back to a list, still in order, and right through both changes.
  for (const slot of [...model]) {
    if (random(50) === 0) continue;
    posting.delete(slot);
    model.delete(slot);
  }
  // Deleting what is not there changes nothing.
  posting.delete(limit + 4000);
  check();
  expect(posting.isBitmap).toBe(false);
  for (const slot of [...model].slice(0, -1)) {
    posting.delete(slot);
    model.delete(slot);
  }
  check();
  expect(posting.only()).toBe([...model][0]);
});

test("a removed document's slot number serves the next insert: a collection trimmed to a cap keeps as many numbers as documents", () => {
  const table = new MemoryTable();
  const id = (i: number): string => `d${String(i).padStart(6, "0")}`;
  for (let i = 0; i < 1000; i += 1) table.insert({ _id: id(i), n: i });
  for (let i = 1000; i < 20_000; i += 1) {
    table.remove(table.get(id(i - 1000))!);
    table.insert({ _id: id(i), n: i });
  }
  expect(table.size).toBe(1000);
  expect(table.slotNumbers).toBe(1000);
  // Found by id, not by a number's earlier document.
  expect(table.get(id(18_999))).toBeUndefined();
  expect(table.doc(table.get(id(19_999))!)).toEqual({ _id: id(19_999), n: 19_999 });
});

test("the cache counts exactly the bytes of the slots it holds, and queues each number once, while removed numbers serve new documents", () => {
  const random = randomSource(3);
  const slots = new SlotArrays();
  const cache = new DocCache(3_000);
  const live = new Set<number>();
  for (let step = 0; step < 30_000; step += 1) {
    const pick = random(4);
    if (pick === 0 || live.size === 0) {
      // A new document whose line is in the file (a load, or an append done): cached.
      const slot = slots.allocate(`d${step}`, { n: step }, step * 100, 50 + random(100));
      live.add(slot);
      cache.admit(slots, slot);
    } else {
      const slot = [...live][random(live.size)]!;
      if (pick === 1) {
        cache.forget(slots, slot);
        slots.release(slot);
        live.delete(slot);
      } else if (pick === 2) {
        // Read again (from its line when evicted): cached again.
        if (slots.docs[slot] === undefined) slots.docs[slot] = { n: step };
        cache.admit(slots, slot);
      } else {
        // A new version of another length.
        cache.resize(slots, slot, 50 + random(100));
      }
    }
    if (step % 1000 === 999) {
      let bytes = 0;
      let held = 0;
      for (let slot = 0; slot < slots.limit; slot += 1) {
        const flags = slots.flags[slot]!;
        if ((flags & IN_CACHE) === 0) continue;
        expect(flags & QUEUED).toBe(QUEUED);
        expect(slots.docs[slot]).toBeDefined();
        bytes += slots.len[slot]!;
        held += 1;
      }
      expect(cache.bytes).toBe(bytes);
      expect(cache.entries).toBe(held);
      // Within its budget once an admission evicted (a resize alone evicts nothing).
      cache.admit(slots, [...live][0]!);
      expect(cache.bytes).toBeLessThanOrEqual(3_000);
    }
  }
  // Removed numbers were reused: far fewer numbers than documents made.
  expect(slots.limit).toBeLessThan(live.size * 2 + 100);

  // A cache under its budget drops its removed slots' entries once they are most of its queue; numbers reused after still count once.
  const roomy = new DocCache(10_000_000);
  const many = new SlotArrays();
  for (let i = 0; i < 3000; i += 1) roomy.admit(many, many.allocate(`e${i}`, { i }, i * 10, 10));
  for (let slot = 0; slot < 2500; slot += 1) {
    roomy.forget(many, slot);
    many.release(slot);
  }
  expect(roomy.entries).toBe(500);
  expect(roomy.bytes).toBe(5000);
  for (let i = 0; i < 2500; i += 1) roomy.admit(many, many.allocate(`f${i}`, { i }, i * 10, 20));
  expect(many.limit).toBe(3000);
  expect(roomy.entries).toBe(3000);
  expect(roomy.bytes).toBe(500 * 10 + 2500 * 20);
});

describe.each([
  ["memory only", undefined],
  ["datafiles, cached", 8 * 1024 * 1024],
  ["datafiles, a cache of a few documents", 4_000],
  ["datafiles, no cache", 0],
] as const)("a key most documents share, while documents come and go (%s)", (variant, cacheBytes) => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "emailsvc-slots-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("lookups, counts and pages by the shared key match a model of the writes, through compactions and a reopening", async () => {
    const open = () => openEmbeddedStore(cacheBytes === undefined ? {} : { dataDir: dir, cacheBytes });
    const store = await open();
    const c = store.collection<AnyDoc>("ledger");
    await c.createIndexes([
      { name: "state", fields: { campaign: 1, state: 1 } },
      { name: "key", fields: { campaign: 1, key: 1 }, unique: true },
    ]);
    const random = randomSource(variant.length);
    const model = new Map<string, { _id: string; campaign: string; key: string; state: string }>();
    const id = (i: number): string => `r${String(i).padStart(5, "0")}`;
    // 3,000 documents, nearly all "queued" at first (a bitmap), then moving to "sent" (a bitmap too), some deleted and inserted again.
    await c.insertMany(
      Array.from({ length: 3000 }, (_, i) => {
        const doc = { _id: id(i), campaign: "c1", key: `k${i}`, state: i % 100 === 0 ? "failed" : "queued" };
        model.set(doc._id, doc);
        return doc;
      }),
    );
    const writes: Array<Promise<unknown>> = [];
    for (let step = 0; step < 6000; step += 1) {
      const i = random(3000);
      const doc = model.get(id(i));
      if (doc === undefined) {
        const fresh = { _id: id(i), campaign: "c1", key: `k${i}`, state: "queued" };
        model.set(fresh._id, fresh);
        writes.push(c.insertOne(fresh));
      } else if (random(10) === 0) {
        model.delete(doc._id);
        writes.push(c.deleteOne({ _id: doc._id }));
      } else if (doc.state === "queued") {
        model.set(doc._id, { ...doc, state: "sent" });
        writes.push(c.updateOne({ _id: doc._id }, { $set: { state: "sent" } }));
      }
      if (cacheBytes !== undefined && step % 1500 === 0) writes.push(c.compact());
      if (step % 500 === 0) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    const check = async (coll: typeof c): Promise<void> => {
      const docs = [...model.values()].sort((a, b) => (a._id < b._id ? -1 : 1));
      for (const state of ["queued", "sent", "failed"]) {
        const expected = docs.filter((doc) => doc.state === state);
        await expect(coll.count({ campaign: "c1", state })).resolves.toBe(expected.length);
        await expect(coll.find({ campaign: "c1", state }, { sort: { _id: 1 }, limit: 100 })).resolves.toEqual(expected.slice(0, 100));
      }
      await expect(coll.count({ campaign: "c1", state: { $in: ["queued", "sent"] } })).resolves.toBe(docs.filter((doc) => doc.state !== "failed").length);
      for (let k = 0; k < 20; k += 1) {
        const i = random(3000);
        await expect(coll.findOne({ campaign: "c1", key: `k${i}` })).resolves.toEqual(model.get(id(i)) ?? null);
        await expect(coll.findOne({ _id: id(i) })).resolves.toEqual(model.get(id(i)) ?? null);
      }
      await expect(coll.count({})).resolves.toBe(model.size);
    };
    await check(c);
    await store.close();
    if (cacheBytes === undefined) return;
    const reopened = await open();
    await check(reopened.collection<AnyDoc>("ledger"));
    await reopened.close();
  });
});
