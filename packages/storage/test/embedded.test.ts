// The embedded store against the shared contract, in memory and on files,
// plus what only it has: datafiles, their lock, compaction and openStore's choice.

import { existsSync, promises as fsPromises } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import Datastore from "@seald-io/nedb";
import { DuplicateKeyError, openEmbeddedStore, openStore } from "../src/index.js";
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
// No cache: every document at rest is read from its datafile line when needed.
describeDocumentStoreContract("embedded, datafiles, no cache", () => openEmbeddedStore({ dataDir: path.join(root, "contract-uncached"), cacheBytes: 0 }));

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
    // The datafile only takes appends: the deleted document and the old value are still in it.
    expect(await readFile(file, "utf8")).toContain("erase.me@example.com");
    expect(await readFile(file, "utf8")).toContain("old@example.com");

    const rewrites = (): number => (c as unknown as { rewrites: number }).rewrites;
    const before = rewrites();
    await Promise.all(Array.from({ length: 10 }, () => c.compact()));
    // The first call's rewrite, and one more for every call made while it ran.
    expect(rewrites() - before).toBe(2);
    const text = await readFile(file, "utf8");
    expect(text).not.toContain("erase.me@example.com");
    expect(text).not.toContain("secret-value");
    expect(text).not.toContain("old@example.com");
    expect(text).toContain("new@example.com");
    // The datafile stays open between appends: writes after the rewrite go to the new file, not the one renamed over.
    await c.insertOne({ _id: "after", email: "later@example.com" });
    expect(await readFile(file, "utf8")).toContain("later@example.com");
    await store.close();
    // Closing the store closes its datafiles.
    if (existsSync("/proc/self/fd")) {
      const open = await Promise.all((await readdir("/proc/self/fd")).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => "")));
      expect(open.filter((target) => target.startsWith(dir))).toEqual([]);
    }
    const reopened = await openEmbeddedStore({ dataDir: dir });
    await expect(reopened.collection("subscribers").find({}, { sort: { _id: 1 } }).then((docs) => docs.map((d) => d._id))).resolves.toEqual(["after", "kept"]);
    await reopened.close();
  });

  test("a directory used by another live process is refused; a stale lock is taken over", async () => {
    const dir = path.join(root, "locked");
    const first = await openEmbeddedStore({ dataDir: dir });
    await first.close();

    // pid 1 is alive (init) and is not us under Jest (a lock of an older version: a bare pid).
    await writeFile(path.join(dir, ".lock"), "1\n");
    if (process.pid !== 1) {
      await expect(openEmbeddedStore({ dataDir: dir, lockWaitMs: 0 })).rejects.toThrow(/in use by process 1/);
    }
    // A pid that cannot be alive: the lock is stale.
    await writeFile(path.join(dir, ".lock"), "2147483646\n");
    const store = await openEmbeddedStore({ dataDir: dir });
    await expect(readFile(path.join(dir, ".lock"), "utf8").then((text) => JSON.parse(text))).resolves.toMatchObject({ pid: process.pid });
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

  test("an array in a field of a compound index not declared arrayField is refused (IndexSpec.arrayField)", async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection("x");
    await c.createIndexes([{ name: "by_tags", fields: { tenant: 1, tags: 1 } }]);
    await expect(c.insertOne({ _id: "1", tenant: "t", tags: ["a"] })).rejects.toThrow(
      /x: tags holds an array but is a field of compound index by_tags; declare it as that index's arrayField/,
    );
    await c.insertOne({ _id: "1", tenant: "t", tags: "a" });
    await expect(c.updateOne({ _id: "1" }, { $set: { tags: ["a"] } })).rejects.toThrow(/by_tags/);
    await expect(c.updateOne({ _id: "1" }, { $addToSet: { tags: { $each: ["b"] } } })).rejects.toThrow(/by_tags/);
    await expect(c.updateOne({ _id: "1" }, { $push: { tags: { $each: ["b"] } } })).rejects.toThrow(/by_tags/);
    await expect(c.findOne({ _id: "1" })).resolves.toEqual({ _id: "1", tenant: "t", tags: "a" });
    // A field of the index inside an object that an update sets whole.
    await c.createIndexes([{ name: "by_meta_tags", fields: { tenant: 1, "meta.tags": 1 } }]);
    await expect(c.updateOne({ _id: "1" }, { $set: { note: "n", meta: { tags: ["a"] } } })).rejects.toThrow(/meta\.tags holds an array but is a field of compound index by_meta_tags/);
    await c.updateOne({ _id: "1" }, { $set: { note: "n", meta: { tags: "a" } } });
    await expect(c.findOne({ _id: "1" })).resolves.toEqual({ _id: "1", tenant: "t", tags: "a", note: "n", meta: { tags: "a" } });
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

describe("embedded datafile format (NeDB's)", () => {
  // Written by hand as NeDB writes it: documents, a later version of one, a
  // removal, index definitions (one removed again) and a Date.
  const nedbFile = [
    '{"_id":"a","email":"a@x","n":1}',
    '{"_id":"b","email":"b@x","n":1}',
    '{"$$indexCreated":{"fieldName":"email","unique":true}}',
    '{"$$indexCreated":{"fieldName":"handle,tenant","unique":true,"sparse":false}}',
    '{"_id":"a","email":"a@x","n":2,"tenant":"t","handle":"h"}',
    '{"$$deleted":true,"_id":"b"}',
    '{"$$indexCreated":{"fieldName":"old","unique":true}}',
    '{"$$indexRemoved":"old"}',
    '{"_id":"c","email":"c@x","when":{"$$date":1795343400000}}',
    // NeDB's sparse unique index (this platform never made one): documents without the field do not clash.
    '{"$$indexCreated":{"fieldName":"code","unique":true,"sparse":true}}',
    "",
  ].join("\n");

  /** A data directory of its own whose `things.db` holds `text`, as a file written before (or by hand). */
  const datafileWith = async (name: string, text: string): Promise<{ dir: string; file: string }> => {
    const dir = path.join(root, name);
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, "things.db");
    await writeFile(file, text);
    return { dir, file };
  };

  test("a datafile NeDB wrote loads: later lines win, removals, index lines (also removed ones), Dates", async () => {
    const { dir } = await datafileWith("nedb-file", nedbFile);
    const store = await openEmbeddedStore({ dataDir: dir });
    try {
      const c = store.collection("things");
      await expect(c.find({}, { sort: { _id: 1 } })).resolves.toEqual([
        { _id: "a", email: "a@x", n: 2, tenant: "t", handle: "h" },
        { _id: "c", email: "c@x", when: new Date(1795343400000) },
      ]);
      // The unique indexes of the file hold before createIndexes names them.
      await expect(c.insertOne({ _id: "d", email: "a@x" })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(c.insertOne({ _id: "d", email: "d@x", tenant: "t", handle: "h" })).rejects.toBeInstanceOf(DuplicateKeyError);
      await c.createIndexes([
        { name: "email_unique", fields: { email: 1 }, unique: true },
        { name: "tenant_handle", fields: { tenant: 1, handle: 1 }, unique: true },
      ]);
      await expect(c.insertOne({ _id: "d", email: "a@x" })).rejects.toThrow(/duplicate key in index email_unique/);
      await expect(c.insertOne({ _id: "d", email: "d@x", tenant: "t", handle: "h" })).rejects.toThrow(/in index tenant_handle/);
      // The sparse index holds for documents that have the field.
      await c.insertOne({ _id: "s1", email: "s1@x", tenant: "t", handle: "s1", code: "x" });
      await expect(c.insertOne({ _id: "s2", email: "s2@x", tenant: "t", handle: "s2", code: "x" })).rejects.toBeInstanceOf(DuplicateKeyError);
      // The removed index is gone.
      // (`c` is the one document without tenant and handle that the unique index allows.)
      await c.insertMany([{ _id: "o1", email: "o1@x", tenant: "t", handle: "o1", old: 1 }, { _id: "o2", email: "o2@x", tenant: "t", handle: "o2", old: 1 }]);
      await expect(c.count({ old: 1 })).resolves.toBe(2);
    } finally {
      await store.close();
    }
    // Rewritten in the same format: one line per live document (a Date as NeDB writes it), one per index.
    const lines = (await readFile(path.join(dir, "things.db"), "utf8")).trim().split("\n");
    expect(lines).toContain('{"_id":"c","email":"c@x","when":{"$$date":1795343400000}}');
    expect(lines.filter((line) => line.startsWith('{"$$indexCreated"'))).toHaveLength(3);
    expect(lines).toContain('{"$$indexCreated":{"fieldName":"code","unique":true,"sparse":true,"fields":["code"]}}');
    expect(lines).toHaveLength(8);
  });

  test("NeDB itself can load what the store writes", async () => {
    const dir = path.join(root, "for-nedb");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("things");
    await c.createIndexes([{ name: "tenant_email", fields: { tenant: 1, email: 1 }, unique: true }]);
    await c.insertMany([{ _id: "1", tenant: "t", email: "a@x", tags: ["x"] }, { _id: "2", tenant: "t", email: "b@x" }]);
    await c.updateOne({ _id: "1" }, { $set: { n: 1 } });
    await c.deleteOne({ _id: "2" });
    // Appended lines, then the same after compaction.
    for (const step of ["appended", "compacted"]) {
      if (step === "compacted") await c.compact();
      // Read only: NeDB's load rewrites the file, so it reads a copy.
      const copy = path.join(root, `nedb-copy-${step}.db`);
      await writeFile(copy, await readFile(path.join(dir, "things.db")));
      const reader = new Datastore({ filename: copy });
      await reader.loadDatabaseAsync();
      await expect(reader.findAsync({})).resolves.toEqual([{ _id: "1", tenant: "t", email: "a@x", tags: ["x"], n: 1 }]);
      await expect(reader.insertAsync({ _id: "3", tenant: "t", email: "a@x" })).rejects.toThrow(/unique/);
    }
    await store.close();
  });

  test("a last line cut short by a crash is dropped and the file rewritten, so the next append starts a line", async () => {
    const { dir, file } = await datafileWith("torn", '{"_id":"a","v":1}\n{"_id":"b","v":1}\n{"_id":"a","v":2}\n{"_id":"c","v');
    const first = await openEmbeddedStore({ dataDir: dir });
    const c = first.collection("things");
    await expect(c.find({}, { sort: { _id: 1 } })).resolves.toEqual([{ _id: "a", v: 2 }, { _id: "b", v: 1 }]);
    await c.insertOne({ _id: "d", v: 1 });
    await c.compact(); // (rewritten at load anyway; waited for here)
    expect(await readFile(file, "utf8")).toBe('{"_id":"a","v":2}\n{"_id":"b","v":1}\n{"_id":"d","v":1}\n');
    await first.close();
    const second = await openEmbeddedStore({ dataDir: dir });
    await expect(second.collection("things").find({}, { sort: { _id: 1 } })).resolves.toEqual([
      { _id: "a", v: 2 },
      { _id: "b", v: 1 },
      { _id: "d", v: 1 },
    ]);
    await second.close();
  });

  test("a whole last line without its newline (a file edited by hand) is kept, and the next append starts a line", async () => {
    const { dir, file } = await datafileWith("no-newline", '{"_id":"a","v":1}\n{"_id":"b","v":1}');
    const first = await openEmbeddedStore({ dataDir: dir });
    await first.collection("things").insertOne({ _id: "c", v: 1 });
    expect(await readFile(file, "utf8")).toBe('{"_id":"a","v":1}\n{"_id":"b","v":1}\n{"_id":"c","v":1}\n');
    await first.close();
  });

  test("corrupt lines are dropped up to 10% of the file; more, and the file is refused, untouched", async () => {
    const dir = path.join(root, "corrupt");
    await mkdir(dir, { recursive: true });
    const good = Array.from({ length: 10 }, (_, i) => `{"_id":"d${i}"}`);
    await writeFile(path.join(dir, "few.db"), [...good.slice(0, 5), "{oops", ...good.slice(5), ""].join("\n"));
    const many = [...good.slice(0, 5), "{oops", "}}", ...good.slice(5), ""].join("\n");
    await writeFile(path.join(dir, "many.db"), many);
    const store = await openEmbeddedStore({ dataDir: dir });
    await expect(store.collection("few").count({})).resolves.toBe(10);
    await expect(store.collection("many").count({})).rejects.toThrow(/16% of the data file is corrupt/);
    await store.close().catch(() => undefined);
    await expect(readFile(path.join(dir, "many.db"), "utf8")).resolves.toBe(many);
  });
});

// Both with documents cached and with none (every document at rest read from
// its line): a rewrite moves every line, and reads must follow.
const cacheVariants: Array<{ variant: string; cacheBytes: number | undefined }> = [
  { variant: "cached", cacheBytes: undefined },
  { variant: "no cache", cacheBytes: 0 },
];
describe.each(cacheVariants)("embedded compaction beside writes ($variant)", ({ variant, cacheBytes }) => {
  const dirFor = (name: string): string => path.join(root, `${name}-${variant.replace(" ", "-")}`);

  test("writes made while compaction runs are kept, in memory and in the file", async () => {
    const dir = dirFor("busy-compaction");
    const store = await openEmbeddedStore({ dataDir: dir, cacheBytes });
    const c = store.collection("ledger");
    await c.insertMany(Array.from({ length: 5000 }, (_, i) => ({ _id: `r${String(i).padStart(5, "0")}`, state: "pending", n: 0 })));
    await c.updateMany({ state: "pending" }, { $set: { state: "queued" } });
    const writes: Array<Promise<unknown>> = [c.compact()];
    for (let i = 0; i < 300; i += 1) {
      writes.push(c.updateOne({ _id: `r${String(i).padStart(5, "0")}` }, { $set: { state: "sent" }, $inc: { n: 1 } }));
      if (i % 50 === 0) writes.push(c.compact());
      writes.push(c.insertOne({ _id: `s${i}`, state: "new" }));
      if (i % 3 === 0) writes.push(c.deleteOne({ _id: `r${String(4000 + i).padStart(5, "0")}` }));
    }
    await Promise.all(writes);
    const expected = await c.find({}, { sort: { _id: 1 } });
    expect(expected).toHaveLength(5000 + 300 - 100);
    await expect(c.count({ state: "sent", n: 1 })).resolves.toBe(300);
    // Reopened without a close (no compaction at close): the file alone.
    const copyDir = dirFor("busy-compaction-copy");
    await mkdir(copyDir, { recursive: true });
    await writeFile(path.join(copyDir, "ledger.db"), await readFile(path.join(dir, "ledger.db")));
    const reopened = await openEmbeddedStore({ dataDir: copyDir, cacheBytes });
    await expect(reopened.collection("ledger").find({}, { sort: { _id: 1 } })).resolves.toEqual(expected);
    await reopened.close();
    await store.close();
  });


  test("writes made while a rewrite runs are acknowledged without waiting for it, and are in the new file", async () => {
    const dir = dirFor("rewrite-gate");
    const store = await openEmbeddedStore({ dataDir: dir, cacheBytes });
    const c = store.collection("ledger");
    const file = path.join(dir, "ledger.db");
    await c.insertMany(Array.from({ length: 2000 }, (_, i) => ({ _id: `r${String(i).padStart(4, "0")}`, state: "pending", secret: "before-erasure" })));
    await c.deleteMany({ _id: { $lt: "r1000" } });
    // The rewrite waits at its temporary file until the gate opens.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const realOpen = fsPromises.open.bind(fsPromises);
    const opens = jest.spyOn(fsPromises, "open").mockImplementation(async (...args: Parameters<typeof fsPromises.open>) => {
      if (String(args[0]).endsWith("~")) await gate;
      return realOpen(...args);
    });
    try {
      const compaction = c.compact();
      await c.insertOne({ _id: "during", state: "new" });
      await c.updateOne({ _id: "r1500" }, { $set: { state: "sent" } });
      await c.deleteOne({ _id: "r1999" });
      // Acknowledged, so in the (old) file already, while the rewrite waits.
      expect(await readFile(file, "utf8")).toContain('"_id":"during"');
      open();
      await compaction;
    } finally {
      opens.mockRestore();
    }
    const text = await readFile(file, "utf8");
    expect(text).not.toContain('"_id":"r0000"');
    const lines = text.trim().split("\n");
    // The snapshot's 1,000 documents, then the three writes made meanwhile.
    expect(lines).toHaveLength(1003);
    expect(lines.slice(1000).map((line) => (JSON.parse(line) as { _id: string })._id)).toEqual(["during", "r1500", "r1999"]);
    await store.close();
    const reopened = await openEmbeddedStore({ dataDir: dir, cacheBytes });
    const again = reopened.collection("ledger");
    await expect(again.count({})).resolves.toBe(1000);
    await expect(again.findOne({ _id: "r1500" })).resolves.toMatchObject({ state: "sent" });
    await expect(again.findOne({ _id: "r1999" })).resolves.toBeNull();
    await reopened.close();
  });
});

describe.each(cacheVariants.concat([{ variant: "a cache of a few documents", cacheBytes: 2_000 }]))("embedded documents at rest ($variant)", ({ variant, cacheBytes }) => {
  test("every answer matches a model of the writes, through compactions with writes meanwhile and a reopening", async () => {
    const dir = path.join(root, `at-rest-${variant.replace(/ /g, "-")}`);
    const store = await openEmbeddedStore({ dataDir: dir, cacheBytes });
    const c = store.collection("records");
    await c.createIndexes([
      { name: "key", fields: { tenant: 1, key: 1 }, unique: true },
      { name: "state", fields: { tenant: 1, state: 1 } },
    ]);
    const model = new Map<string, AnyDocLike>();
    const id = (i: number): string => `m${String(i).padStart(4, "0")}`;
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const writes: Array<Promise<unknown>> = [];
    for (let step = 0; step < 3000; step += 1) {
      const i = random(600);
      const doc = model.get(id(i));
      if (doc === undefined) {
        const fresh = { _id: id(i), tenant: "t", key: `k${i}`, state: "queued", n: 0, text: "é".repeat(random(40)) };
        model.set(fresh._id, fresh);
        writes.push(c.insertOne(fresh));
      } else if (random(5) === 0) {
        model.delete(doc._id);
        writes.push(c.deleteOne({ _id: doc._id }));
      } else {
        const next = { ...doc, state: ["queued", "sent", "failed"][random(3)]!, n: doc.n + 1 };
        model.set(doc._id, next);
        writes.push(c.updateOne({ _id: doc._id }, { $set: { state: next.state }, $inc: { n: 1 } }));
      }
      if (step % 700 === 0) writes.push(c.compact());
      if (step % 250 === 0) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    const expected = [...model.values()].sort((a, b) => (a._id < b._id ? -1 : 1));
    const check = async (coll: typeof c): Promise<void> => {
      await expect(coll.find({}, { sort: { _id: 1 } })).resolves.toEqual(expected);
      for (const state of ["queued", "sent", "failed"]) {
        await expect(coll.count({ tenant: "t", state })).resolves.toBe(expected.filter((doc) => doc.state === state).length);
      }
      const some = expected[random(expected.length)]!;
      await expect(coll.findOne({ tenant: "t", key: some.key })).resolves.toEqual(some);
      await expect(coll.find({ n: { $gte: 3 } }, { sort: { n: -1, _id: 1 } })).resolves.toEqual(
        expected.filter((doc) => doc.n >= 3).sort((a, b) => b.n - a.n || (a._id < b._id ? -1 : 1)),
      );
    };
    await check(c);
    await c.compact();
    await check(c);
    await store.close();
    const reopened = await openEmbeddedStore({ dataDir: dir, cacheBytes });
    await check(reopened.collection("records"));
    await reopened.close();
  });
});

describe("embedded documents at rest: what reads them", () => {
  test("a count takes the index that answers it exactly over one giving fewer documents to read", async () => {
    const store = await openEmbeddedStore({ dataDir: path.join(root, "at-rest-count-plan"), cacheBytes: 0 });
    const c = store.collection("rows");
    await c.createIndexes([
      { name: "by_status", fields: { status: 1 } },
      { name: "by_status_tag", fields: { tenant: 1, status: 1, tags: 1 }, arrayField: "tags" },
    ]);
    // Every row holds both tags: their two keys hold 200 entries, the status's one 100.
    await c.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: `r${String(i).padStart(3, "0")}`, tenant: "t", status: "active", tags: ["a", "b"] })));
    const filter = { tenant: "t", status: "active", tags: { $in: ["a", "b"] } };
    const read = (): number => (c as unknown as { reads: number }).reads;
    // Both indexes are built by this first count, together: each document read once.
    await expect(c.count(filter)).resolves.toBe(100);
    expect(read()).toBe(100);
    const before = read();
    await expect(c.count(filter)).resolves.toBe(100);
    await expect(c.count({ ...filter, tags: { $in: ["a", "c"] } })).resolves.toBe(100);
    expect(read() - before).toBe(0);
    // A find still takes the fewest documents: it reads each it returns anyway.
    await expect(c.find(filter)).resolves.toHaveLength(100);
    await store.close();
  });

  test("a count an index answers exactly reads no document; one it cannot, reads each from its line", async () => {
    const dir = path.join(root, "at-rest-count");
    const store = await openEmbeddedStore({ dataDir: dir, cacheBytes: 0 });
    const c = store.collection("rows");
    await c.createIndexes([
      { name: "by_state", fields: { tenant: 1, state: 1, _id: 1 } },
      { name: "by_tag", fields: { tags: 1 } },
    ]);
    await c.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: `r${String(i).padStart(3, "0")}`, tenant: "t", state: i % 3 === 0 ? "sent" : "queued", tags: i % 2 === 0 ? ["a", "b"] : ["b"] })));
    const read = (): number => (c as unknown as { reads: number }).reads;
    // A non-unique index is built by the first query that uses it, reading every document once.
    await c.count({ tenant: "t", state: "none" });
    await c.count({ tags: "none" });
    expect(read()).toBe(600);
    const reads = (): number => read() - 600;
    await expect(c.count({ tenant: "t", state: "sent" })).resolves.toBe(100);
    await expect(c.count({ tenant: "t", state: { $in: ["sent", "queued"] } })).resolves.toBe(300);
    // A document holding both values is counted once.
    await expect(c.count({ tags: { $in: ["a", "b"] } })).resolves.toBe(300);
    await expect(c.count({ tags: "a" })).resolves.toBe(150);
    expect(reads()).toBe(0);
    // A condition the index does not hold: every candidate is read and matched.
    await expect(c.count({ tenant: "t", state: "sent", tags: "a" })).resolves.toBe(50);
    expect(reads()).toBe(100);
    // A document found is read from its line to be matched, and (no cache at all here) again to be copied out.
    await expect(c.findOne({ _id: "r000" })).resolves.toMatchObject({ state: "sent", tags: ["a", "b"] });
    expect(reads()).toBe(102);
    await store.close();
  });
});

interface AnyDocLike {
  _id: string;
  tenant: string;
  key: string;
  state: string;
  n: number;
  text: string;
}

describe("embedded indexes", () => {
  test("lookups through leading fields of a compound index stay right as documents move between keys", async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection("ledger");
    await c.createIndexes([{ name: "by_campaign_state", fields: { tenant: 1, campaign: 1, state: 1, _id: 1 } }]);
    await c.insertMany(
      Array.from({ length: 3000 }, (_, i) => ({ _id: `c${i % 3}:${String(i).padStart(5, "0")}`, tenant: "t", campaign: `c${i % 3}`, state: "pending" })),
    );
    const pending = (campaign: string) => c.count({ tenant: "t", campaign, state: "pending" });
    await expect(pending("c1")).resolves.toBe(1000);
    const page = await c.find({ tenant: "t", campaign: "c1", state: "pending", _id: { $gt: "c1:", $lt: "c1;" } }, { sort: { _id: 1 }, limit: 100 });
    expect(page).toHaveLength(100);
    await c.updateMany({ _id: { $in: page.map((d) => d._id) }, state: "pending" }, { $set: { state: "queued" } });
    await expect(pending("c1")).resolves.toBe(900);
    await expect(c.count({ tenant: "t", campaign: "c1", state: { $in: ["queued", "sent"] } })).resolves.toBe(100);
    const next = await c.find({ tenant: "t", campaign: "c1", state: "pending", _id: { $gt: "c1:", $lt: "c1;" } }, { sort: { _id: -1 }, limit: 5 });
    expect(next.map((d) => d._id)).toEqual(["c1:02998", "c1:02995", "c1:02992", "c1:02989", "c1:02986"]);
    await c.deleteMany({ campaign: "c1", state: "queued" });
    await expect(c.count({ tenant: "t", campaign: "c1" })).resolves.toBe(900);
    await expect(c.find({ tenant: "t", campaign: "c1", state: "queued" })).resolves.toEqual([]);
    await store.close();
  });

  test("a unique index over an array field holds per element; an empty array holds no key", async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection("x");
    await c.createIndexes([{ name: "codes", fields: { codes: 1 }, unique: true }]);
    await c.insertOne({ _id: "1", codes: ["a", "b", "a"] });
    await expect(c.insertOne({ _id: "2", codes: ["b"] })).rejects.toThrow(/in index codes/);
    await c.insertOne({ _id: "2", codes: ["c"] });
    await expect(c.updateOne({ _id: "2" }, { $push: { codes: { $each: ["a"] } } })).rejects.toThrow(/in index codes/);
    await c.updateOne({ _id: "1" }, { $pull: { codes: "a" } });
    await c.updateOne({ _id: "2" }, { $push: { codes: { $each: ["a"] } } });
    await c.insertMany([{ _id: "3", codes: [] }, { _id: "4", codes: [] }]);
    await expect(c.find({ codes: "a" })).resolves.toEqual([{ _id: "2", codes: ["c", "a"] }]);
    // A missing field is a value of its own: one document may lack it (as in NeDB and MongoDB).
    await c.insertOne({ _id: "5" });
    await expect(c.insertOne({ _id: "6" })).rejects.toThrow(/in index codes/);
    await store.close();
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

  test("updateEach writes its updates in one append, acknowledged once they are on disk", async () => {
    const dir = path.join(root, "each");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("emails");
    const file = path.join(dir, "emails.db");
    await c.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: `e${i}`, status: "sending" })));
    const appends = (): number => (c as unknown as { appends: number }).appends;
    const before = appends();
    const matched = await c.updateEach(Array.from({ length: 50 }, (_, i) => ({ filter: { _id: `e${i}`, status: "sending" }, update: { $set: { status: "sent" } } })));
    expect(matched).toEqual(Array.from({ length: 50 }, () => 1));
    expect(appends() - before).toBe(1);
    // Acknowledged: every changed document's line is in the file already.
    const lines = (await readFile(file, "utf8")).trim().split("\n").slice(50);
    expect(lines.map((line) => JSON.parse(line) as { _id: string; status: string })).toEqual(Array.from({ length: 50 }, (_, i) => ({ _id: `e${i}`, status: "sent" })));
    await store.close();
    const reopened = await openEmbeddedStore({ dataDir: dir });
    await expect(reopened.collection("emails").count({ status: "sent" })).resolves.toBe(50);
    await reopened.close();
  });

  test("concurrent writes share appends, in order, each acknowledged once on disk", async () => {
    const dir = path.join(root, "grouped");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("ledger");
    const file = path.join(dir, "ledger.db");
    await c.insertOne({ _id: "warm" });
    const appends = (): number => (c as unknown as { appends: number }).appends;
    const before = appends();
    {
      const writes = Array.from({ length: 300 }, (_, i) => c.insertOne({ _id: `d${String(i).padStart(3, "0")}`, n: i }));
      // Each write, as it is acknowledged, finds its own line in the file.
      const seen = await Promise.all(writes.map((write, i) => write.then(async () => (await lineIds(file)).includes(`d${String(i).padStart(3, "0")}`))));
      expect(seen.every(Boolean)).toBe(true);
      // One append per write would be 300; concurrent writes went out together.
      expect(appends() - before).toBeGreaterThan(0);
      expect(appends() - before).toBeLessThan(30);
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
