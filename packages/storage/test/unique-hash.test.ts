// A unique index of the embedded store keeps a 32-bit hash of each key's
// text (memory-table.ts, keyHash), so two different keys may share a hash.
// These tests take two real keys that do (found by a birthday search over
// the real hash function) and check that the index still tells them apart:
// both documents are stored and found, a true duplicate of either is refused
// (on insert, update and index creation), and the shared hash survives
// deletes, reloads and compaction. On files without a cache, telling them
// apart reads the other document from its datafile line.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { DuplicateKeyError, openEmbeddedStore, type AnyDoc, type DocumentStore } from "../src/index.js";
import { keyHash, uniqueKeyText } from "../src/memory-table.js";

const TENANT = "acc_1:test";
const INDEX = { name: "idem_per_tenant", fields: { tenant: 1, idem_key: 1 }, unique: true } as const;

/** Two idempotency keys whose index keys (with TENANT) share a hash. */
function collidingKeys(): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; i < 2_000_000; i += 1) {
    const key = `key:${i}`;
    const hash = keyHash(uniqueKeyText([TENANT, key]));
    const earlier = seen.get(hash);
    if (earlier !== undefined) return [earlier, key];
    seen.set(hash, key);
  }
  throw new Error("no two keys share a hash among 2,000,000 (the hash is not 32-bit)");
}

const [keyA, keyB] = collidingKeys();

async function expectDuplicate(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DuplicateKeyError);
  expect((error as DuplicateKeyError).index).toBe("idem_per_tenant");
}

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "emailsvc-unique-hash-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

test("the two keys differ and share a hash", () => {
  expect(keyA).not.toBe(keyB);
  expect(keyHash(uniqueKeyText([TENANT, keyA]))).toBe(keyHash(uniqueKeyText([TENANT, keyB])));
  // A key's text keeps values of different types apart before hashing (strict equality, as NeDB's).
  expect(uniqueKeyText(["1"])).not.toBe(uniqueKeyText([1]));
});

describe.each([
  ["memory only", () => openEmbeddedStore({})],
  ["datafiles, no cache", (dir: string) => openEmbeddedStore({ dataDir: dir, cacheBytes: 0 })],
] as const)("a unique index with two keys sharing a hash (%s)", (_name, open) => {
  let store: DocumentStore;
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(root, "store-"));
    store = await open(dir);
  });
  afterEach(async () => {
    await store.close();
  });

  test("stores both, finds and counts each by its own key, and refuses a true duplicate of either", async () => {
    const emails = store.collection<AnyDoc>("emails");
    await emails.createIndexes([INDEX]);
    await emails.insertOne({ _id: "a", tenant: TENANT, idem_key: keyA });
    await emails.insertOne({ _id: "b", tenant: TENANT, idem_key: keyB });

    expect((await emails.findOne({ tenant: TENANT, idem_key: keyA }))?._id).toBe("a");
    expect((await emails.findOne({ tenant: TENANT, idem_key: keyB }))?._id).toBe("b");
    expect(await emails.count({ tenant: TENANT, idem_key: keyA })).toBe(1);
    expect(await emails.count({ tenant: TENANT, idem_key: { $in: [keyA, keyB] } })).toBe(2);

    await expectDuplicate(emails.insertOne({ _id: "c", tenant: TENANT, idem_key: keyA }));
    await expectDuplicate(emails.insertOne({ _id: "c", tenant: TENANT, idem_key: keyB }));
    // insertMany reports the duplicates it skipped.
    expect(await emails.insertMany([{ _id: "c", tenant: TENANT, idem_key: keyB }, { _id: "d", tenant: TENANT, idem_key: "key:new" }])).toEqual({ inserted: 1, duplicates: [0] });
    // Another tenant's same key is another key.
    await emails.insertOne({ _id: "c", tenant: "acc_2:test", idem_key: keyA });
    expect(await emails.count({})).toBe(4);
  });

  test("an update onto the other key is refused and changes nothing; a change of other fields keeps each findable", async () => {
    const emails = store.collection<AnyDoc>("emails");
    await emails.createIndexes([INDEX]);
    await emails.insertMany([
      { _id: "a", tenant: TENANT, idem_key: keyA, status: "queued" },
      { _id: "b", tenant: TENANT, idem_key: keyB, status: "queued" },
    ]);
    await expectDuplicate(emails.updateOne({ _id: "a" }, { $set: { idem_key: keyB } }));
    expect(await emails.findOne({ _id: "a" })).toEqual({ _id: "a", tenant: TENANT, idem_key: keyA, status: "queued" });

    await emails.updateOne({ _id: "a" }, { $set: { status: "sent" } });
    await emails.updateOne({ _id: "b" }, { $set: { idem_key: "key:moved" } });
    expect((await emails.findOne({ tenant: TENANT, idem_key: keyA }))?.status).toBe("sent");
    expect(await emails.findOne({ tenant: TENANT, idem_key: keyB })).toBeNull();
    expect((await emails.findOne({ tenant: TENANT, idem_key: "key:moved" }))?._id).toBe("b");
    // Its old key is free again, even though a document under the same hash remains.
    await emails.updateOne({ _id: "b" }, { $set: { idem_key: keyB } });
    expect((await emails.findOne({ tenant: TENANT, idem_key: keyB }))?._id).toBe("b");
  });

  test("a delete frees only its own key; an index made over both documents accepts them", async () => {
    const emails = store.collection<AnyDoc>("emails");
    await emails.insertMany([
      { _id: "a", tenant: TENANT, idem_key: keyA },
      { _id: "b", tenant: TENANT, idem_key: keyB },
    ]);
    // Made after the documents: the index is filled from them (one shares the other's hash).
    await emails.createIndexes([INDEX]);
    await emails.deleteOne({ _id: "a" });
    await expectDuplicate(emails.insertOne({ _id: "c", tenant: TENANT, idem_key: keyB }));
    await emails.insertOne({ _id: "c", tenant: TENANT, idem_key: keyA });
    expect((await emails.findOne({ tenant: TENANT, idem_key: keyA }))?._id).toBe("c");
    expect((await emails.findOne({ tenant: TENANT, idem_key: keyB }))?._id).toBe("b");
    // A true duplicate within the documents refuses the index, as before.
    const other = store.collection<AnyDoc>("others");
    await other.insertMany([
      { _id: "x", tenant: TENANT, idem_key: keyA },
      { _id: "y", tenant: TENANT, idem_key: keyA },
    ]);
    await expectDuplicate(other.createIndexes([INDEX]));
  });
});

test("both documents are found again after a reload and a compaction (datafiles)", async () => {
  const dir = await mkdtemp(path.join(root, "reload-"));
  let store = await openEmbeddedStore({ dataDir: dir, cacheBytes: 0 });
  let emails = store.collection<AnyDoc>("emails");
  await emails.createIndexes([INDEX]);
  await emails.insertMany([
    { _id: "a", tenant: TENANT, idem_key: keyA },
    { _id: "b", tenant: TENANT, idem_key: keyB },
  ]);
  await emails.compact();
  await store.close();

  store = await openEmbeddedStore({ dataDir: dir, cacheBytes: 0 });
  emails = store.collection<AnyDoc>("emails");
  expect((await emails.findOne({ tenant: TENANT, idem_key: keyA }))?._id).toBe("a");
  expect((await emails.findOne({ tenant: TENANT, idem_key: keyB }))?._id).toBe("b");
  await expectDuplicate(emails.insertOne({ _id: "c", tenant: TENANT, idem_key: keyB }));
  await store.close();
});
