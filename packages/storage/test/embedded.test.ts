// The embedded store (NeDB) against the shared contract, in memory and on files,
// plus what only it has: datafiles, their lock, compaction and openStore's choice.

import { promises as fsPromises } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openEmbeddedStore, openStore } from "../src/index.js";
import { describeDocumentStoreContract } from "./contract.js";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "emailsvc-storage-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describeDocumentStoreContract("embedded, memory only", () => openEmbeddedStore({}), { persistent: false });
describeDocumentStoreContract("embedded, datafiles", () => openEmbeddedStore({ dataDir: path.join(root, "contract") }));

describe("embedded datafiles", () => {
  test("one datafile per collection, created with the directory, compacted at close", async () => {
    const dir = path.join(root, "files", "nested");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("subscribers");
    await c.createIndexes([{ name: "email", fields: { email: 1 }, unique: true }]);
    await c.insertOne({ _id: "1", email: "a@x", n: 0 });
    for (let i = 0; i < 5; i += 1) await c.updateOne({ _id: "1" }, { $inc: { n: 1 } });
    await store.collection("tags").insertOne({ _id: "t" });
    expect((await readdir(dir)).sort()).toEqual([".lock", "subscribers.db", "tags.db"]);
    await store.close();

    expect((await readdir(dir)).sort()).toEqual(["subscribers.db", "tags.db"]);
    // Compacted: one line per live document and one per index, no history.
    const lines = (await readFile(path.join(dir, "subscribers.db"), "utf8")).trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines.map((line) => JSON.parse(line) as unknown)).toContainEqual({ _id: "1", email: "a@x", n: 5 });
  });

  test("compact() removes deleted documents and earlier values from the datafile while the store is open; concurrent calls share rewrites", async () => {
    const dir = path.join(root, "compact");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("subscribers");
    await c.insertOne({ _id: "gone", email: "erase.me@example.com", meta: "secret-value" });
    await c.insertOne({ _id: "kept", email: "old@example.com" });
    await c.updateOne({ _id: "kept" }, { $set: { email: "new@example.com" } });
    await c.deleteOne({ _id: "gone" });
    const file = path.join(dir, "subscribers.db");
    // NeDB only appends: the deleted document and the old value are still in the file.
    expect(await readFile(file, "utf8")).toContain("erase.me@example.com");
    expect(await readFile(file, "utf8")).toContain("old@example.com");

    const rewrites: unknown[] = [];
    const db = (c as unknown as { db: { compactDatafileAsync(): Promise<void> } }).db;
    const original = db.compactDatafileAsync.bind(db);
    db.compactDatafileAsync = () => {
      rewrites.push(1);
      return original();
    };
    await Promise.all(Array.from({ length: 10 }, () => c.compact()));
    // The first call's rewrite, and one more for every call made while it ran.
    expect(rewrites).toHaveLength(2);
    const text = await readFile(file, "utf8");
    expect(text).not.toContain("erase.me@example.com");
    expect(text).not.toContain("secret-value");
    expect(text).not.toContain("old@example.com");
    expect(text).toContain("new@example.com");
    await store.close();
  });

  test("a directory used by another live process is refused; a stale lock is taken over", async () => {
    const dir = path.join(root, "locked");
    const first = await openEmbeddedStore({ dataDir: dir });
    await first.close();

    // pid 1 is alive (init) and is not us under Jest.
    await writeFile(path.join(dir, ".lock"), "1\n");
    if (process.pid !== 1) {
      await expect(openEmbeddedStore({ dataDir: dir })).rejects.toThrow(/in use by process 1/);
    }
    // A pid that cannot be alive: the lock is stale.
    await writeFile(path.join(dir, ".lock"), "2147483646\n");
    const store = await openEmbeddedStore({ dataDir: dir });
    await expect(readFile(path.join(dir, ".lock"), "utf8")).resolves.toBe(`${process.pid}\n`);
    await store.close();
  });

  test("two stores of this process share a directory but never a datafile", async () => {
    const dir = path.join(root, "shared");
    const a = await openEmbeddedStore({ dataDir: dir });
    const b = await openEmbeddedStore({ dataDir: dir });
    a.collection("one");
    expect(() => b.collection("one")).toThrow(/open in another store/);
    b.collection("two");
    await a.close();
    await expect(readdir(dir)).resolves.toContain(".lock");
    await b.close();
    await expect(readdir(dir)).resolves.not.toContain(".lock");
  });

  test("an index whose uniqueness changed is rebuilt, not refused", async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection("x");
    await c.createIndexes([{ name: "code", fields: { code: 1 }, unique: true }]);
    await c.insertOne({ _id: "1", code: "a" });
    await expect(c.insertOne({ _id: "2", code: "a" })).rejects.toThrow(/duplicate key in index code/);
    await c.createIndexes([{ name: "code", fields: { code: 1 } }]);
    await c.insertOne({ _id: "2", code: "a" });
    await expect(c.count({ code: "a" })).resolves.toBe(2);
    await store.close();
  });

  test("an array in a field of a compound index not declared arrayField is refused (NeDB's lookups would miss it)", async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection("x");
    await c.createIndexes([{ name: "by_tags", fields: { tenant: 1, tags: 1 } }]);
    await expect(c.insertOne({ _id: "1", tenant: "t", tags: ["a"] })).rejects.toThrow(
      /x: tags holds an array but is a field of compound index by_tags; declare it as that index's arrayField/,
    );
    await c.insertOne({ _id: "1", tenant: "t", tags: "a" });
    await expect(c.updateOne({ _id: "1" }, { $set: { tags: ["a"] } })).rejects.toThrow(/by_tags/);
    await expect(c.updateOne({ _id: "1" }, { $addToSet: { tags: { $each: ["b"] } } })).rejects.toThrow(/by_tags/);
    await expect(c.findOne({ _id: "1" })).resolves.toEqual({ _id: "1", tenant: "t", tags: "a" });
    await store.close();
  });

  test("a compound index kept in a datafile from before its arrayField was declared is replaced", async () => {
    const dir = path.join(root, "array-field");
    const before = await openEmbeddedStore({ dataDir: dir });
    await before.collection("x").createIndexes([{ name: "by_tags", fields: { tenant: 1, tags: 1 } }]);
    await before.close();
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("x");
    await c.createIndexes([{ name: "by_tags", fields: { tenant: 1, tags: 1 }, arrayField: "tags" }]);
    await c.insertOne({ _id: "1", tenant: "t", tags: ["a", "b"] });
    await expect(c.find({ tenant: "t", tags: "a" })).resolves.toEqual([{ _id: "1", tenant: "t", tags: ["a", "b"] }]);
    await store.close();
  });

  test("a closed store refuses work", async () => {
    const store = await openEmbeddedStore({ dataDir: path.join(root, "closed") });
    const c = store.collection("x");
    await c.insertOne({ _id: "1" });
    await store.close();
    await store.close(); // idempotent
    await expect(c.findOne({})).rejects.toThrow(/closed/);
    expect(() => store.collection("y")).toThrow(/closed/);
    await expect(store.ping()).resolves.toBe(false);
  });
});

describe("embedded group append", () => {
  const lineIds = async (file: string): Promise<string[]> =>
    (await readFile(file, "utf8"))
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => (JSON.parse(line) as { _id?: string })._id ?? "");

  test("a write is in the datafile when it is acknowledged", async () => {
    const dir = path.join(root, "acked");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("ledger");
    const file = path.join(dir, "ledger.db");
    await c.insertOne({ _id: "one", state: "pending" });
    expect(await lineIds(file)).toContain("one");
    await c.updateOne({ _id: "one" }, { $set: { state: "sent" } });
    expect((await readFile(file, "utf8")).trim().split("\n").at(-1)).toContain('"state":"sent"');
    await c.deleteOne({ _id: "one" });
    expect((await readFile(file, "utf8")).trim().split("\n").at(-1)).toContain('"$$deleted":true');
    await store.close();
  });

  test("concurrent writes share appends, in order, each acknowledged once on disk", async () => {
    const dir = path.join(root, "grouped");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("ledger");
    const file = path.join(dir, "ledger.db");
    await c.insertOne({ _id: "warm" });
    const appends = jest.spyOn(fsPromises, "appendFile");
    try {
      const writes = Array.from({ length: 300 }, (_, i) => c.insertOne({ _id: `d${String(i).padStart(3, "0")}`, n: i }));
      // Each write, as it is acknowledged, finds its own line in the file.
      const seen = await Promise.all(writes.map((write, i) => write.then(async () => (await lineIds(file)).includes(`d${String(i).padStart(3, "0")}`))));
      expect(seen.every(Boolean)).toBe(true);
      // One append per write would be 300; concurrent writes went out together.
      expect(appends.mock.calls.length).toBeGreaterThan(0);
      expect(appends.mock.calls.length).toBeLessThan(30);
    } finally {
      appends.mockRestore();
    }
    // The file holds the writes in the order they were made.
    expect((await lineIds(file)).filter((id) => id.startsWith("d"))).toEqual(Array.from({ length: 300 }, (_, i) => `d${String(i).padStart(3, "0")}`));
    await store.close();
    const reopened = await openEmbeddedStore({ dataDir: dir });
    await expect(reopened.collection("ledger").count({})).resolves.toBe(301);
    await reopened.close();
  });
});

describe("openStore", () => {
  test("without mongoUrl: the embedded store under dataDir/dbName", async () => {
    const store = await openStore({ dataDir: path.join(root, "data"), dbName: "subscribers" });
    await store.collection("things").insertOne({ _id: "1" });
    await store.close();
    await expect(readdir(path.join(root, "data", "subscribers"))).resolves.toEqual(["things.db"]);
  });

  test("without mongoUrl nor dataDir: memory only", async () => {
    const store = await openStore({ dbName: "x" });
    await store.collection("c").insertOne({ _id: "1" });
    await expect(store.collection("c").count({})).resolves.toBe(1);
    await store.close();
  });

  test("refuses a dbName that is not a plain directory name", async () => {
    await expect(openStore({ dataDir: root, dbName: "../up" })).rejects.toThrow(/database name/);
  });
});
