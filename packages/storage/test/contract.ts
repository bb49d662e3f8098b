// The contract every DocumentStore adapter must meet: one suite, run against the
// embedded store (memory and files) and against a MongoDB-compatible server
// (FerretDB v1 in CI). When an adapter fails here, the adapter is wrong, not the
// test: services rely on exactly these behaviours.

import {
  DuplicateKeyError,
  type Collection,
  type AnyDoc,
  type Doc,
  type DocumentStore,
  type Filter,
  type IndexSpec,
  MAX_BATCH_DOCUMENTS,
} from "../src/index.js";

export interface ContractOptions {
  /** Whether data outlives close(); false only for the memory-only embedded store. */
  persistent?: boolean;
}

let sequence = 0;
/** A collection name no earlier test or run has used. */
function freshName(prefix = "c"): string {
  sequence += 1;
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}_${sequence}`;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection, got a result");
    },
    (error: unknown) => error,
  );
}

async function expectDuplicate(promise: Promise<unknown>, index: string): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(DuplicateKeyError);
  expect((error as DuplicateKeyError).index).toBe(index);
}

const ids = (docs: Doc[]): string[] => docs.map((doc) => doc._id);

export function describeDocumentStoreContract(
  name: string,
  open: () => Promise<DocumentStore>,
  options: ContractOptions = {},
): void {
  const persistent = options.persistent ?? true;

  describe(`DocumentStore contract: ${name}`, () => {
    let store: DocumentStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });

    /** A new, empty collection for one test. */
    const fresh = <T extends Doc = AnyDoc>(): Collection<T> => store.collection<T>(freshName());

    describe("basics", () => {
      test("ping answers true", async () => {
        await expect(store.ping()).resolves.toBe(true);
      });

      test("compact() keeps every live document as it is and can be asked for many times at once", async () => {
        const c = fresh();
        await c.insertMany([{ _id: "a", v: 1 }, { _id: "b", v: 2 }, { _id: "c", v: 3 }]);
        await c.deleteOne({ _id: "b" });
        await c.updateOne({ _id: "c" }, { $set: { v: 4 } });
        await Promise.all([c.compact(), c.compact(), c.compact()]);
        await c.insertOne({ _id: "d", v: 5 });
        await c.compact();
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([{ _id: "a", v: 1 }, { _id: "c", v: 4 }, { _id: "d", v: 5 }]);
      });

      test("a document round-trips exactly: numbers, strings, booleans, nulls, nested objects, arrays", async () => {
        const c = fresh();
        const doc = {
          _id: "doc_1",
          int: 42,
          negative: -7,
          zero: 0,
          float: 3.25,
          big: 2 ** 40 + 1,
          maxSafe: Number.MAX_SAFE_INTEGER,
          tiny: 1e-9,
          text: 'Grüezi 👋 <b>&amp;</b> "quoted" \n new line',
          empty: "",
          yes: true,
          no: false,
          nothing: null,
          nested: { a: { b: { c: [1, "two", null, { d: false }] } }, list: [] as unknown[] },
          emptyObject: {},
          arrays: [{ inner: [1, 2] }, { inner: [] }, "x", 1, null],
          objects: [{ k: 1 }, { k: 2, extra: { deep: "yes" } }],
          isoTime: "2026-11-22T10:30:00.000Z",
          msTime: 1795343400000,
        };
        await c.insertOne(doc);
        const found = await c.findOne({ _id: "doc_1" });
        expect(found).toStrictEqual(doc);
        expect(Object.keys(found ?? {})).toEqual(Object.keys(doc));
        const [listed] = await c.find({});
        expect(listed).toStrictEqual(doc);
      });

      test("returned documents are plain objects, detached from the store", async () => {
        const c = fresh();
        const doc = { _id: "a", nested: { list: [1, 2] } };
        await c.insertOne(doc);
        doc.nested.list.push(3); // the caller's object stays the caller's
        const found = await c.findOne({ _id: "a" });
        expect(found).not.toBeNull();
        expect(Object.getPrototypeOf(found)).toBe(Object.prototype);
        expect(Object.getPrototypeOf(found?.nested)).toBe(Object.prototype);
        expect(found).toStrictEqual({ _id: "a", nested: { list: [1, 2] } });
        (found?.nested as { list: number[] }).list.push(9);
        await expect(c.findOne({ _id: "a" })).resolves.toStrictEqual({ _id: "a", nested: { list: [1, 2] } });
      });

      test("fields set to undefined are not stored", async () => {
        const c = fresh();
        await c.insertOne({ _id: "u", keep: 1, drop: undefined, nested: { drop: undefined, keep: 2 } });
        const found = await c.findOne({ _id: "u" });
        expect(found).toStrictEqual({ _id: "u", keep: 1, nested: { keep: 2 } });
        expect(found).not.toHaveProperty("drop");
      });

      test("findOne answers null when nothing matches; find answers []", async () => {
        const c = fresh();
        await expect(c.findOne({ _id: "missing" })).resolves.toBeNull();
        await expect(c.find({ _id: "missing" })).resolves.toEqual([]);
        await expect(c.count({})).resolves.toBe(0);
      });

      test("inserting an existing _id throws DuplicateKeyError on index _id_", async () => {
        const c = fresh();
        await c.insertOne({ _id: "same", v: 1 });
        await expectDuplicate(c.insertOne({ _id: "same", v: 2 }), "_id_");
        await expect(c.findOne({ _id: "same" })).resolves.toStrictEqual({ _id: "same", v: 1 });
      });

      test("invalid input is refused before it reaches the backend", async () => {
        const c = fresh();
        await c.insertOne({ _id: "x", a: 1 });
        await expect(c.findOne({ a: undefined })).rejects.toThrow(TypeError);
        await expect(c.find({ a: { $regex: "x" } } as unknown as Filter)).rejects.toThrow(/unsupported operator/);
        await expect(c.find({}, { limit: 0 })).rejects.toThrow(/limit/);
        await expect(c.updateOne({ _id: "x" }, { $set: { _id: "y" } })).rejects.toThrow(/_id/);
        await expect(c.updateOne({ _id: "x" }, { $set: { a: 2 }, $inc: { a: 1 } })).rejects.toThrow(TypeError);
        await expect(c.updateOne({ _id: "x" }, { $pull: { a: { b: 1 } as never } })).rejects.toThrow(/exact value/);
        await expect(c.insertOne({ _id: "y", "a.b": 1 })).rejects.toThrow(/field name/);
        await expect(c.insertOne({ _id: "z", n: Number.NaN })).rejects.toThrow(TypeError);
        await expect(c.insertOne({ _id: "z", nested: [[1]] })).rejects.toThrow(
          /array may not directly contain an array/,
        );
        await expect(c.updateOne({ _id: "x" }, { $push: { l: { $each: [[1]] } } })).rejects.toThrow(/array/);
        expect(() => store.collection("../escape")).toThrow(/collection name/);
        await expect(c.findOne({ _id: "x" })).resolves.toStrictEqual({ _id: "x", a: 1 });
      });

      test("an update touching a path twice, or a path and a field inside it, is refused and changes nothing", async () => {
        const c = fresh();
        await c.insertOne({ _id: "x", a: { b: 1 }, n: 1 });
        // A sibling that sorts between a path and its field (`a-b` between `a` and `a.b`) hides nothing.
        await expect(c.updateOne({ _id: "x" }, { $set: { a: { b: 2 }, "a-b": 1 }, $inc: { "a.b": 1 } })).rejects.toThrow(
          "update touches a and a.b in one operation",
        );
        await expect(c.updateOne({ _id: "x" }, { $set: { "a.b": 2 }, $unset: { a: "" } })).rejects.toThrow("update touches a and a.b in one operation");
        // Many paths (compared another way than a few).
        const many: Record<string, number> = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, i]));
        await expect(c.updateOne({ _id: "x" }, { $set: { ...many, "a-b": 1, "a.b": 3 }, $unset: { a: "" } })).rejects.toThrow(
          "update touches a and a.b in one operation",
        );
        await expect(c.updateOne({ _id: "x" }, { $set: many, $inc: { f7: 1 } })).rejects.toThrow("update touches f7 and f7 in one operation");
        await expect(c.findOne({ _id: "x" })).resolves.toStrictEqual({ _id: "x", a: { b: 1 }, n: 1 });
        // Paths sharing a prefix without one inside the other are fine.
        await expect(c.updateOne({ _id: "x" }, { $set: { ...many, "a.bc": 1, "n-1": 2 }, $inc: { n: 1 } })).resolves.toMatchObject({ a: { b: 1, bc: 1 }, n: 2, f29: 29 });
      });
    });

    describe("indexes", () => {
      const indexes: IndexSpec[] = [
        { name: "email_unique", fields: { email: 1 }, unique: true },
        { name: "tenant_handle_unique", fields: { tenant: 1, handle: 1 }, unique: true },
        { name: "by_created", fields: { tenant: 1, created: -1 } },
      ];

      test("createIndexes is idempotent", async () => {
        const c = fresh();
        await c.createIndexes(indexes);
        await c.createIndexes(indexes);
        await c.createIndexes([]);
        await c.insertOne({ _id: "1", email: "a@x", tenant: "t1", handle: "a", created: 1 });
        await c.createIndexes(indexes);
        await expect(c.count({})).resolves.toBe(1);
      });

      test("a single-field unique index refuses a second insert of the value", async () => {
        const c = fresh();
        await c.createIndexes(indexes);
        await c.insertOne({ _id: "1", email: "a@x", tenant: "t1", handle: "a" });
        await expectDuplicate(c.insertOne({ _id: "2", email: "a@x", tenant: "t2", handle: "b" }), "email_unique");
        await c.insertOne({ _id: "3", email: "b@x", tenant: "t1", handle: "b" });
        await expect(c.count({})).resolves.toBe(2);
      });

      test("a compound unique index refuses the same combination only", async () => {
        const c = fresh();
        await c.createIndexes(indexes);
        await c.insertOne({ _id: "1", email: "1@x", tenant: "t1", handle: "h" });
        await c.insertOne({ _id: "2", email: "2@x", tenant: "t2", handle: "h" });
        await c.insertOne({ _id: "3", email: "3@x", tenant: "t1", handle: "g" });
        await expectDuplicate(
          c.insertOne({ _id: "4", email: "4@x", tenant: "t1", handle: "h" }),
          "tenant_handle_unique",
        );
        await expect(c.count({})).resolves.toBe(3);
      });

      test("an update that would break a unique index throws and changes nothing", async () => {
        const c = fresh();
        await c.createIndexes(indexes);
        await c.insertOne({ _id: "1", email: "a@x", tenant: "t1", handle: "a", n: 0 });
        await c.insertOne({ _id: "2", email: "b@x", tenant: "t1", handle: "b", n: 0 });
        await expectDuplicate(c.updateOne({ _id: "2" }, { $set: { email: "a@x" }, $inc: { n: 1 } }), "email_unique");
        await expectDuplicate(
          c.updateOne({ _id: "2" }, { $set: { handle: "a" }, $inc: { n: 1 } }),
          "tenant_handle_unique",
        );
        await expect(c.findOne({ _id: "2" })).resolves.toStrictEqual({
          _id: "2",
          email: "b@x",
          tenant: "t1",
          handle: "b",
          n: 0,
        });
        // Moving to a free combination, or keeping one's own value, is fine.
        await expect(
          c.updateOne({ _id: "2" }, { $set: { tenant: "t2", handle: "a", email: "b@x" } }),
        ).resolves.toMatchObject({
          tenant: "t2",
          handle: "a",
        });
      });

      test("a compound index over an array field (arrayField) finds documents by element: equality, $in, $all, $nin", async () => {
        const c = fresh();
        await c.createIndexes([
          { name: "members", fields: { tenant: 1, tags: 1 }, arrayField: "tags" },
          { name: "members_by_id", fields: { tenant: 1, state: 1, tags: 1, _id: 1 }, arrayField: "tags" },
        ]);
        await c.insertOne({ _id: "1", tenant: "t1", state: "on", tags: ["a", "b"] });
        await c.insertOne({ _id: "2", tenant: "t1", state: "on", tags: ["a"] });
        await c.insertOne({ _id: "3", tenant: "t1", state: "off", tags: ["a", "b"] });
        await c.insertOne({ _id: "4", tenant: "t2", state: "on", tags: ["a", "b"] });
        await c.updateOne({ _id: "2" }, { $addToSet: { tags: { $each: ["c"] } } });
        const match = async (filter: Filter) => ids(await c.find(filter, { sort: { _id: 1 } }));
        await expect(match({ tenant: "t1", tags: "a" })).resolves.toEqual(["1", "2", "3"]);
        await expect(match({ tenant: "t1", state: "on", tags: "b" })).resolves.toEqual(["1"]);
        await expect(match({ tenant: "t1", state: "on", tags: { $in: ["b", "c"] } })).resolves.toEqual(["1", "2"]);
        await expect(match({ tenant: "t1", state: "on", tags: { $all: ["a", "b"] } })).resolves.toEqual(["1"]);
        await expect(match({ tenant: "t1", state: "on", tags: { $all: ["a"], $nin: ["c"] }, _id: { $gt: "0" } })).resolves.toEqual(["1"]);
        await expect(c.count({ tenant: "t1", tags: "c" })).resolves.toBe(1);
        await expect(c.createIndexes([{ name: "bad", fields: { tenant: 1, tags: 1 }, arrayField: "other" }])).rejects.toThrow(/arrayField must name one of its fields/);
        await expect(c.createIndexes([{ name: "bad", fields: { tenant: 1, tags: 1 }, arrayField: "tags", unique: true }])).rejects.toThrow(/cannot be unique/);
      });

      test("a unique index cannot be created over duplicates", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", code: "same" });
        await c.insertOne({ _id: "2", code: "same" });
        const error = await rejection(c.createIndexes([{ name: "code_unique", fields: { code: 1 }, unique: true }]));
        expect(error).toBeInstanceOf(DuplicateKeyError);
      });

      test("concurrent inserts of one unique key: exactly one wins", async () => {
        const c = fresh();
        await c.createIndexes(indexes);
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) =>
            c.insertOne({ _id: `r${i}`, email: "race@x", tenant: "t", handle: `h${i}` }),
          ),
        );
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(9);
        for (const r of lost) expect(r.reason).toBeInstanceOf(DuplicateKeyError);
        await expect(c.count({ email: "race@x" })).resolves.toBe(1);
      });
    });

    describe("updateOne", () => {
      test("returns the document as it is after the update", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", status: "new", profile: { name: "Ann", city: "Bern" }, gone: 1, n: 5 });
        const after = await c.updateOne(
          { _id: "1" },
          {
            $set: { status: "active", "profile.city": "Zurich", "profile.zip": "8000" },
            $unset: { gone: "" },
            $inc: { n: 2, fresh: 1 },
          },
        );
        const expected = {
          _id: "1",
          status: "active",
          profile: { name: "Ann", city: "Zurich", zip: "8000" },
          n: 7,
          fresh: 1,
        };
        expect(after).toStrictEqual(expected);
        await expect(c.findOne({ _id: "1" })).resolves.toStrictEqual(expected);
      });

      test("a guarded update that loses answers null and changes nothing", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", status: "pending", attempts: 0 });
        const first = await c.updateOne(
          { _id: "1", status: "pending" },
          { $set: { status: "sent" }, $inc: { attempts: 1 } },
        );
        expect(first).toStrictEqual({ _id: "1", status: "sent", attempts: 1 });
        const second = await c.updateOne(
          { _id: "1", status: "pending" },
          { $set: { status: "sent" }, $inc: { attempts: 1 } },
        );
        expect(second).toBeNull();
        await expect(c.updateOne({ _id: "nope" }, { $set: { status: "x" } })).resolves.toBeNull();
        await expect(c.findOne({ _id: "1" })).resolves.toStrictEqual({ _id: "1", status: "sent", attempts: 1 });
      });

      test("updates exactly one of several matching documents", async () => {
        const c = fresh();
        for (const id of ["a", "b", "c"]) await c.insertOne({ _id: id, state: "open" });
        const updated = await c.updateOne({ state: "open" }, { $set: { state: "taken" } });
        expect(updated?.state).toBe("taken");
        await expect(c.count({ state: "taken" })).resolves.toBe(1);
        await expect(c.count({ state: "open" })).resolves.toBe(2);
      });

      test("an update that changes nothing acts as findOne", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", v: 1 });
        await expect(c.updateOne({ _id: "1" }, {})).resolves.toStrictEqual({ _id: "1", v: 1 });
        await expect(c.updateOne({ _id: "1" }, { $set: {}, $push: { list: { $each: [] } } })).resolves.toStrictEqual({
          _id: "1",
          v: 1,
        });
        await expect(c.updateOne({ _id: "2" }, {})).resolves.toBeNull();
        await expect(c.findOne({ _id: "1" })).resolves.toStrictEqual({ _id: "1", v: 1 });
      });

      test("$set stores objects and arrays whole; $unset of a nested or missing field", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", meta: { a: 1, b: 2 } });
        await expect(
          c.updateOne({ _id: "1" }, { $set: { meta: { c: [1, { d: null }] }, list: ["x"] } }),
        ).resolves.toStrictEqual({
          _id: "1",
          meta: { c: [1, { d: null }] },
          list: ["x"],
        });
        await expect(c.updateOne({ _id: "1" }, { $unset: { "meta.c": true, missing: 1 } })).resolves.toStrictEqual({
          _id: "1",
          meta: {},
          list: ["x"],
        });
      });

      test("$addToSet never duplicates, within one $each either", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", tags: ["a"] });
        await expect(
          c.updateOne({ _id: "1" }, { $addToSet: { tags: { $each: ["a", "b", "b", "c"] } } }),
        ).resolves.toStrictEqual({
          _id: "1",
          tags: ["a", "b", "c"],
        });
        await expect(
          c.updateOne({ _id: "1" }, { $addToSet: { tags: { $each: ["c", "a"] }, fresh: { $each: [1, 1, 2] } } }),
        ).resolves.toStrictEqual({
          _id: "1",
          tags: ["a", "b", "c"],
          fresh: [1, 2],
        });
      });

      test("concurrent $addToSet of one value adds it once", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", tags: [] });
        await Promise.all(
          Array.from({ length: 10 }, () => c.updateOne({ _id: "1" }, { $addToSet: { tags: { $each: ["t"] } } })),
        );
        await expect(c.findOne({ _id: "1" })).resolves.toStrictEqual({ _id: "1", tags: ["t"] });
      });

      test("$push appends in order, duplicates included", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", log: [1] });
        await expect(
          c.updateOne({ _id: "1" }, { $push: { log: { $each: [2, 1, { at: 3 }] }, other: { $each: ["x"] } } }),
        ).resolves.toStrictEqual({
          _id: "1",
          log: [1, 2, 1, { at: 3 }],
          other: ["x"],
        });
      });

      test("$push with $set and $inc: onto an array, onto a missing field, never into an earlier copy; onto a scalar refused", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", status: "queued", n: 1, history: [{ status: "queued" }], note: "x" });
        const first = await c.updateOne({ _id: "1" }, { $set: { status: "sent" }, $inc: { n: 1 }, $push: { history: { $each: [{ status: "sent" }] } } });
        expect(first).toStrictEqual({ _id: "1", status: "sent", n: 2, history: [{ status: "queued" }, { status: "sent" }], note: "x" });
        const second = await c.updateOne({ _id: "1" }, { $set: { status: "delivered" }, $push: { history: { $each: [{ status: "delivered" }] }, fresh: { $each: ["a", "b"] } } });
        expect(second).toStrictEqual({
          _id: "1",
          status: "delivered",
          n: 2,
          history: [{ status: "queued" }, { status: "sent" }, { status: "delivered" }],
          note: "x",
          fresh: ["a", "b"],
        });
        // The copy returned before is not the stored array grown in place.
        expect(first?.history).toHaveLength(2);
        await expect(c.updateOne({ _id: "1" }, { $set: { status: "x" }, $push: { note: { $each: ["y"] } } })).rejects.toThrow();
        await expect(c.findOne({ _id: "1" })).resolves.toStrictEqual(second);
      });

      test("$pull removes every element equal to the exact value, and nothing else", async () => {
        const c = fresh();
        await c.insertOne({
          _id: "1",
          tags: ["a", "ab", "b", "a", "A"],
          nums: [1, 2, 1, 10],
          flags: [true, false, null],
        });
        await expect(c.updateOne({ _id: "1" }, { $pull: { tags: "a", nums: 1, flags: null } })).resolves.toStrictEqual({
          _id: "1",
          tags: ["ab", "b", "A"],
          nums: [2, 10],
          flags: [true, false],
        });
        // Absent values and missing fields: nothing happens (and no field appears).
        await expect(
          c.updateOne({ _id: "1" }, { $pull: { tags: "zzz", missing: "a", "deep.missing": 1 } }),
        ).resolves.toStrictEqual({
          _id: "1",
          tags: ["ab", "b", "A"],
          nums: [2, 10],
          flags: [true, false],
        });
        await expect(c.updateOne({ _id: "1" }, { $pull: { missing: "a" }, $set: { x: 1 } })).resolves.toStrictEqual({
          _id: "1",
          tags: ["ab", "b", "A"],
          nums: [2, 10],
          flags: [true, false],
          x: 1,
        });
      });

      test("$pull stays guarded: a losing filter answers null", async () => {
        const c = fresh();
        await c.insertOne({ _id: "1", state: "a", tags: ["x"] });
        await expect(c.updateOne({ _id: "1", state: "b" }, { $pull: { tags: "x" } })).resolves.toBeNull();
        await expect(c.updateOne({ _id: "1", state: "b" }, { $pull: { missing: "x" } })).resolves.toBeNull();
        await expect(c.findOne({ _id: "1" })).resolves.toStrictEqual({ _id: "1", state: "a", tags: ["x"] });
      });

      test("concurrent $inc on one document gives the exact total, each caller seeing its own step", async () => {
        const c = fresh();
        await c.insertOne({ _id: "counter", n: 0 });
        const results = await Promise.all(
          Array.from({ length: 25 }, () => c.updateOne({ _id: "counter" }, { $inc: { n: 1 } })),
        );
        const seen = results.map((doc) => doc?.n as number).sort((a, b) => a - b);
        expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
        await expect(c.findOne({ _id: "counter" })).resolves.toStrictEqual({ _id: "counter", n: 25 });
      });

      test("$set with $inc: a missing field is counted from the step, a non-number refused whole, the rest left as it was", async () => {
        const c = fresh();
        await c.insertOne({ _id: "d", label: "x", nested: { a: 1 }, list: [1, 2] });
        await expect(c.updateOne({ _id: "d" }, { $set: { label: "y", extra: { b: [true] } }, $inc: { hits: 2 } })).resolves.toStrictEqual({
          _id: "d",
          label: "y",
          nested: { a: 1 },
          list: [1, 2],
          extra: { b: [true] },
          hits: 2,
        });
        await expect(c.updateOne({ _id: "d" }, { $set: { label: "z" }, $inc: { label2: 1, hits: -3 } })).resolves.toMatchObject({ label: "z", label2: 1, hits: -1 });
        await expect(c.updateOne({ _id: "d" }, { $set: { extra: 1 }, $inc: { label: 1 } })).rejects.toThrow();
        await expect(c.findOne({ _id: "d" })).resolves.toMatchObject({ label: "z", extra: { b: [true] }, hits: -1 });
        // A returned document is a copy: changing it changes nothing stored.
        const returned = await c.updateOne({ _id: "d" }, { $set: { label: "w" } });
        (returned!.nested as { a: number }).a = 99;
        (returned!.list as number[]).push(3);
        await expect(c.findOne({ _id: "d" })).resolves.toMatchObject({ nested: { a: 1 }, list: [1, 2] });
      });

      test("concurrent guarded updates: exactly one claims the document", async () => {
        const c = fresh();
        await c.insertOne({ _id: "job", owner: null });
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => c.updateOne({ _id: "job", owner: null }, { $set: { owner: `w${i}` } })),
        );
        const winners = results.filter((doc) => doc !== null);
        expect(winners).toHaveLength(1);
        await expect(c.findOne({ _id: "job" })).resolves.toStrictEqual(winners[0]);
      });
    });

    describe("queries", () => {
      let c: Collection;
      const people = [
        {
          _id: "p1",
          name: "ann",
          age: 31,
          tenant: "t1",
          tags: ["vip", "news"],
          address: { city: "Bern", zip: "3000" },
          nick: null,
        },
        { _id: "p2", name: "bob", age: 25, tenant: "t1", tags: ["news"], address: { city: "Zurich", zip: "8000" } },
        { _id: "p3", name: "cid", age: 42, tenant: "t2", tags: [], address: { city: "Bern", zip: "3001" }, nick: "c" },
        { _id: "p4", name: "dee", age: 25, tenant: "t2", tags: ["vip"], active: false },
        { _id: "p5", name: "eve", age: 58, tenant: "t1", active: true, address: { city: "Basel" } },
      ];
      const match = async (filter: Filter): Promise<string[]> => ids(await c.find(filter, { sort: { _id: 1 } }));

      beforeAll(async () => {
        c = store.collection(freshName("people"));
        for (const person of people) await c.insertOne(person);
      });

      it("counts matching documents by a field's value, those without it under \"\"", async () => {
        expect(Object.fromEntries(await c.countBy({ tenant: "t1" }, "name"))).toEqual({ ann: 1, bob: 1, eve: 1 });
        expect(Object.fromEntries(await c.countBy({ age: { $gte: 25 } }, "tenant"))).toEqual({ t1: 3, t2: 2 });
        expect(Object.fromEntries(await c.countBy({ tenant: "t2" }, "nick"))).toEqual({ c: 1, "": 1 });
        expect((await c.countBy({ tenant: "nobody" }, "name")).size).toBe(0);
      });

      test("equality and $eq on scalars, ANDed across fields", async () => {
        await expect(match({ tenant: "t1" })).resolves.toEqual(["p1", "p2", "p5"]);
        await expect(match({ tenant: "t1", age: 25 })).resolves.toEqual(["p2"]);
        await expect(match({ age: { $eq: 25 } })).resolves.toEqual(["p2", "p4"]);
        await expect(match({ active: false })).resolves.toEqual(["p4"]);
        await expect(match({})).resolves.toEqual(["p1", "p2", "p3", "p4", "p5"]);
      });

      test("null matches null and missing fields; $ne null needs a value", async () => {
        await expect(match({ nick: null })).resolves.toEqual(["p1", "p2", "p4", "p5"]);
        await expect(match({ nick: { $eq: null } })).resolves.toEqual(["p1", "p2", "p4", "p5"]);
        await expect(match({ nick: { $ne: null } })).resolves.toEqual(["p3"]);
        await expect(match({ nick: { $in: [null, "c"] } })).resolves.toEqual(["p1", "p2", "p3", "p4", "p5"]);
        await expect(match({ nick: { $nin: [null] } })).resolves.toEqual(["p3"]);
      });

      test("$ne and $nin also match missing fields", async () => {
        await expect(match({ active: { $ne: true } })).resolves.toEqual(["p1", "p2", "p3", "p4"]);
        await expect(match({ name: { $nin: ["ann", "bob"] } })).resolves.toEqual(["p3", "p4", "p5"]);
        await expect(match({ active: { $nin: [true] } })).resolves.toEqual(["p1", "p2", "p3", "p4"]);
      });

      test("$in", async () => {
        await expect(match({ name: { $in: ["ann", "eve", "zed"] } })).resolves.toEqual(["p1", "p5"]);
        await expect(match({ _id: { $in: [] } })).resolves.toEqual([]);
      });

      test("$exists", async () => {
        await expect(match({ active: { $exists: true } })).resolves.toEqual(["p4", "p5"]);
        await expect(match({ active: { $exists: false } })).resolves.toEqual(["p1", "p2", "p3"]);
        await expect(match({ nick: { $exists: true } })).resolves.toEqual(["p1", "p3"]);
        await expect(match({ tags: { $exists: true } })).resolves.toEqual(["p1", "p2", "p3", "p4"]);
        await expect(match({ "address.zip": { $exists: false } })).resolves.toEqual(["p4", "p5"]);
      });

      // Issue 16, defect 4: the embedded engine read `constructor`, `toString`
      // and the like through the prototype chain, so `$exists: true` on them
      // matched everyone (and `false` nobody), where MongoDB sees own fields
      // only; a string's characters and a Date's methods were fields too.
      test("a field named like a built-in property exists only where a document has it", async () => {
        const b = fresh();
        await b.insertMany([
          { _id: "q1", meta: { plan: "pro" }, name: "ann", tags: ["vip"], at: new Date(0) },
          { _id: "q2", meta: { constructor: "own", toString: "own too", valueOf: 1 }, name: "bob", tags: [] },
          { _id: "q3", meta: {}, tags: [{ length: 2 }] },
        ]);
        const found = async (filter: Filter): Promise<string[]> => ids(await b.find(filter, { sort: { _id: 1 } }));
        for (const key of ["constructor", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf", "__defineGetter__", "toLocaleString"]) {
          const own = key === "constructor" || key === "toString" || key === "valueOf" ? ["q2"] : [];
          await expect(found({ [`meta.${key}`]: { $exists: true } })).resolves.toEqual(own);
          await expect(found({ [`meta.${key}`]: { $exists: false } })).resolves.toEqual(["q1", "q2", "q3"].filter((id) => !own.includes(id)));
          await expect(b.count({ [`meta.${key}`]: { $exists: true } })).resolves.toBe(own.length);
          await expect(found({ [key]: { $exists: true } })).resolves.toEqual([]);
          await expect(found({ [`meta.${key}`]: null })).resolves.toEqual(["q1", "q2", "q3"].filter((id) => !own.includes(id)));
          await expect(found({ [`meta.${key}`]: { $ne: "own" } })).resolves.toEqual(["q1", "q2", "q3"].filter((id) => id !== "q2" || key !== "constructor"));
        }
        await expect(found({ "meta.constructor": "own" })).resolves.toEqual(["q2"]);
        await expect(found({ "meta.constructor": { $in: ["own", "x"] } })).resolves.toEqual(["q2"]);
        await expect(found({ "meta.valueOf": { $gte: 1 } })).resolves.toEqual(["q2"]);
        await expect(found({ $or: [{ "meta.toString": { $exists: true } }, { "meta.plan": "pro" }] })).resolves.toEqual(["q1", "q2"]);
        // A string, an array and a Date have no fields of their own but their elements'.
        await expect(found({ "name.length": { $exists: true } })).resolves.toEqual([]);
        await expect(found({ "name.0": { $exists: true } })).resolves.toEqual([]);
        await expect(found({ "at.getTime": { $exists: true } })).resolves.toEqual([]);
        await expect(found({ "tags.length": { $exists: true } })).resolves.toEqual(["q3"]);
        await expect(found({ "tags.length": 2 })).resolves.toEqual(["q3"]);
        await expect(found({ "tags.0": "vip" })).resolves.toEqual(["q1"]);
        // Sorting by such a field sees own values only (missing sorts first).
        expect(ids(await b.find({}, { sort: { "meta.constructor": -1, _id: 1 } }))).toEqual(["q2", "q1", "q3"]);
      });

      test("__proto__ is refused as a field name everywhere (no backend stores it alike)", async () => {
        const b = fresh();
        const doc = JSON.parse('{"_id": "p", "meta": {"__proto__": "x"}}') as AnyDoc;
        await expect(b.insertOne(doc)).rejects.toThrow(/__proto__/);
        await expect(b.find({ "meta.__proto__": { $exists: true } })).rejects.toThrow(/__proto__/);
        await expect(b.updateOne({ _id: "p" }, { $set: { "meta.__proto__": "x" } })).rejects.toThrow(/__proto__/);
        await expect(b.count({})).resolves.toBe(0);
      });

      test("ranges on numbers and strings, several operators on one field", async () => {
        await expect(match({ age: { $gt: 25 } })).resolves.toEqual(["p1", "p3", "p5"]);
        await expect(match({ age: { $gte: 25, $lt: 42 } })).resolves.toEqual(["p1", "p2", "p4"]);
        await expect(match({ age: { $lte: 31, $ne: 25 } })).resolves.toEqual(["p1"]);
        await expect(match({ name: { $gt: "bob", $lte: "dee" } })).resolves.toEqual(["p3", "p4"]);
        // A range never matches a field of another type.
        await expect(match({ name: { $gt: 0 } })).resolves.toEqual([]);
      });

      test("dotted fields reach into nested objects", async () => {
        await expect(match({ "address.city": "Bern" })).resolves.toEqual(["p1", "p3"]);
        await expect(match({ "address.city": "Bern", "address.zip": { $gt: "3000" } })).resolves.toEqual(["p3"]);
        await expect(match({ "address.city": { $in: ["Basel", "Zurich"] } })).resolves.toEqual(["p2", "p5"]);
        await expect(match({ "address.city": { $ne: "Bern" } })).resolves.toEqual(["p2", "p4", "p5"]);
      });

      test("conditions on array fields hold when an element matches ($ne/$nin: when none does)", async () => {
        await expect(match({ tags: "vip" })).resolves.toEqual(["p1", "p4"]);
        await expect(match({ tags: { $in: ["news", "other"] } })).resolves.toEqual(["p1", "p2"]);
        await expect(match({ tags: { $ne: "vip" } })).resolves.toEqual(["p2", "p3", "p5"]);
        await expect(match({ tags: { $nin: ["vip", "news"] } })).resolves.toEqual(["p3", "p5"]);
      });

      test("$all: an array field holding every value, alone and beside $nin", async () => {
        await expect(match({ tags: { $all: ["vip", "news"] } })).resolves.toEqual(["p1"]);
        await expect(match({ tags: { $all: ["news"] } })).resolves.toEqual(["p1", "p2"]);
        await expect(match({ tags: { $all: ["news"], $nin: ["vip"] } })).resolves.toEqual(["p2"]);
        await expect(match({ tags: { $all: ["vip", "other"] } })).resolves.toEqual([]);
        await expect(match({ name: { $all: ["ann"] } })).resolves.toEqual(["p1"]);
        await expect(match({ tenant: "t2", tags: { $all: ["vip"] } })).resolves.toEqual(["p4"]);
        await expect(c.find({ tags: { $all: [] } })).rejects.toThrow(/\$all on tags in filter takes a non-empty array/);
        await expect(c.find({ tags: { $all: [null] } } as unknown as Filter)).rejects.toThrow(/non-empty array of strings, numbers or booleans/);
      });

      test("$or, alone and with other conditions", async () => {
        await expect(match({ $or: [{ name: "ann" }, { age: { $gt: 50 } }] })).resolves.toEqual(["p1", "p5"]);
        await expect(match({ tenant: "t1", $or: [{ age: 25 }, { active: true }] })).resolves.toEqual(["p2", "p5"]);
        await expect(
          match({
            $or: [
              { "address.city": "Bern", tenant: "t2" },
              { tags: "news", age: { $lt: 30 } },
            ],
          }),
        ).resolves.toEqual(["p2", "p3"]);
        await expect(match({ $or: [{ nick: null }, { $or: [{ name: "cid" }] }] })).resolves.toEqual([
          "p1",
          "p2",
          "p3",
          "p4",
          "p5",
        ]);
      });

      test("count", async () => {
        await expect(c.count({})).resolves.toBe(5);
        await expect(c.count({ tenant: "t2" })).resolves.toBe(2);
        await expect(c.count({ $or: [{ age: 25 }, { name: "eve" }] })).resolves.toBe(3);
        await expect(c.count({ name: "nobody" })).resolves.toBe(0);
      });

      test("sort ascending and descending, with limit, on one or more fields", async () => {
        expect(ids(await c.find({}, { sort: { age: 1, _id: 1 } }))).toEqual(["p2", "p4", "p1", "p3", "p5"]);
        expect(ids(await c.find({}, { sort: { age: -1, _id: -1 }, limit: 3 }))).toEqual(["p5", "p3", "p1"]);
        expect(ids(await c.find({ tenant: "t1" }, { sort: { name: -1 }, limit: 2 }))).toEqual(["p5", "p2"]);
        expect(ids(await c.find({}, { sort: { age: 1, name: -1 }, limit: 2 }))).toEqual(["p4", "p2"]);
        expect(ids(await c.find({}, { sort: { "address.zip": -1 }, limit: 2 }))).toEqual(["p2", "p3"]);
        expect(await c.find({}, { limit: 2 })).toHaveLength(2);
      });

      // FerretDB builds its SQL per command (find drops dotted paths from what
      // it pushes down, update and delete do not), so writes are checked too.
      test("count, updateOne and deleteMany select what find selects", async () => {
        const filters: Filter[] = [
          { "address.city": "Bern" },
          { "address.city": "Bern", tenant: "t2" },
          { tags: "vip" },
          { tags: { $ne: "vip" }, tenant: "t1" },
          { $or: [{ "address.city": "Basel" }, { age: 42 }] },
          { "address.city": "Nowhere" },
        ];
        for (const filter of filters) {
          const expected = await match(filter);
          await expect(c.count(filter)).resolves.toBe(expected.length);
          const updated = await c.updateOne(filter, { $set: { seen: true } });
          if (expected.length === 0) expect(updated).toBeNull();
          else expect(expected).toContain(updated?._id);
          await c.updateOne({ _id: updated?._id ?? "none" }, { $unset: { seen: true } });

          const copy = store.collection(freshName("people_copy"));
          for (const person of people) await copy.insertOne(person);
          await expect(copy.deleteMany(filter)).resolves.toBe(expected.length);
          expect(ids(await copy.find({}, { sort: { _id: 1 } }))).toEqual(
            people.map((p) => p._id).filter((id) => !expected.includes(id)),
          );
        }
      });
    });

    test("cursor pagination by _id, forwards and backwards", async () => {
      const c = fresh();
      const all = Array.from({ length: 11 }, (_, i) => `sub_${String(i).padStart(3, "0")}`);
      const shuffled = [...all].sort(() => Math.random() - 0.5);
      for (const id of shuffled) await c.insertOne({ _id: id, tenant: id === "sub_005" ? "other" : "t" });

      const forwards: string[] = [];
      let after: string | undefined;
      for (;;) {
        const filter: Filter = after === undefined ? { tenant: "t" } : { tenant: "t", _id: { $gt: after } };
        const page = await c.find(filter, { sort: { _id: 1 }, limit: 3 });
        forwards.push(...ids(page));
        if (page.length < 3) break;
        after = page[page.length - 1]?._id;
      }
      expect(forwards).toEqual(all.filter((id) => id !== "sub_005"));

      const backwards: string[] = [];
      let before: string | undefined;
      for (;;) {
        const filter: Filter = before === undefined ? {} : { _id: { $lt: before } };
        const page = await c.find(filter, { sort: { _id: -1 }, limit: 4 });
        backwards.push(...ids(page));
        if (page.length < 4) break;
        before = page[page.length - 1]?._id;
      }
      expect(backwards).toEqual([...all].reverse());
    });

    test("deleteOne deletes one and tells; deleteMany tells how many", async () => {
      const c = fresh();
      for (let i = 0; i < 6; i += 1) await c.insertOne({ _id: `d${i}`, kind: i < 4 ? "old" : "new" });
      await expect(c.deleteOne({ kind: "old" })).resolves.toBe(true);
      await expect(c.count({ kind: "old" })).resolves.toBe(3);
      await expect(c.deleteOne({ _id: "nope" })).resolves.toBe(false);
      await expect(c.deleteMany({ kind: "old" })).resolves.toBe(3);
      await expect(c.deleteMany({ kind: "old" })).resolves.toBe(0);
      await expect(c.deleteMany({})).resolves.toBe(2);
      await expect(c.count({})).resolves.toBe(0);
      // A deleted _id may be used again.
      await c.insertOne({ _id: "d0", kind: "again" });
      await expect(c.findOne({ _id: "d0" })).resolves.toStrictEqual({ _id: "d0", kind: "again" });
    });

    describe("batches", () => {
      const emailIndex: IndexSpec[] = [{ name: "tenant_email", fields: { tenant: 1, email: 1 }, unique: true }];

      test("insertMany inserts every document, skipping and reporting unique clashes by position", async () => {
        const c = fresh();
        await c.createIndexes(emailIndex);
        await c.insertOne({ _id: "a", tenant: "t", email: "a@x" });
        const result = await c.insertMany([
          { _id: "b", tenant: "t", email: "b@x" },
          { _id: "a", tenant: "t", email: "other@x" }, // _id taken
          { _id: "c", tenant: "t", email: "a@x" }, // email taken
          { _id: "d", tenant: "t", email: "d@x" },
          { _id: "e", tenant: "t", email: "d@x" }, // clashes with d, earlier in this batch
          { _id: "f", tenant: "u", email: "a@x" },
        ]);
        expect(result).toEqual({ inserted: 3, duplicates: [1, 2, 4] });
        expect(ids(await c.find({}, { sort: { _id: 1 } }))).toEqual(["a", "b", "d", "f"]);
        await expect(c.findOne({ _id: "a" })).resolves.toEqual({ _id: "a", tenant: "t", email: "a@x" });
        // A retried batch inserts only what is missing.
        await expect(c.insertMany([{ _id: "b", tenant: "t", email: "b@x" }, { _id: "g", tenant: "t", email: "g@x" }])).resolves.toEqual({
          inserted: 1,
          duplicates: [0],
        });
        await expect(c.insertMany([])).resolves.toEqual({ inserted: 0, duplicates: [] });
      });

      test("insertMany of many documents, each readable after", async () => {
        const c = fresh();
        const docs = Array.from({ length: 2500 }, (_, i) => ({ _id: `r${String(i).padStart(5, "0")}`, n: i, state: "pending" }));
        await expect(c.insertMany(docs)).resolves.toEqual({ inserted: 2500, duplicates: [] });
        await expect(c.count({ state: "pending" })).resolves.toBe(2500);
        await expect(c.findOne({ _id: "r01234" })).resolves.toEqual({ _id: "r01234", n: 1234, state: "pending" });
      });

      test("pages in _id order after a cursor, ascending and descending, dense and sparse matches", async () => {
        const c = fresh();
        const docs = Array.from({ length: 3000 }, (_, i) => ({ _id: `d${String(i).padStart(5, "0")}`, group: i % 3, rare: i % 1000 === 7 }));
        // Inserted out of order: the pages follow _id, not insertion.
        await c.insertMany([...docs].reverse());
        const walk = async (filter: Filter, direction: 1 | -1, limit: number) => {
          const seen: string[] = [];
          for (;;) {
            const last = seen[seen.length - 1];
            const bound = last === undefined ? {} : { _id: direction === 1 ? { $gt: last } : { $lt: last } };
            const page = await c.find({ ...filter, ...bound }, { sort: { _id: direction }, limit });
            seen.push(...ids(page));
            if (page.length < limit) return seen;
          }
        };
        const expected = (keep: (d: (typeof docs)[number]) => boolean) => docs.filter(keep).map((d) => d._id);
        await expect(walk({ group: 1 }, 1, 100)).resolves.toEqual(expected((d) => d.group === 1));
        await expect(walk({ group: 1 }, -1, 100)).resolves.toEqual(expected((d) => d.group === 1).reverse());
        await expect(walk({ rare: true }, 1, 2)).resolves.toEqual(expected((d) => d.rare));
        await expect(walk({}, 1, 700)).resolves.toEqual(expected(() => true));
        // Many ids at once ($in of a batch), alone and beside other conditions, paged and counted:
        // exactly the listed documents, whatever the stores plan.
        const listed = docs.filter((_, i) => i % 10 !== 0).map((d) => d._id);
        await expect(c.count({ _id: { $in: listed } })).resolves.toBe(2700);
        await expect(c.find({ _id: { $in: listed } }, { sort: { _id: 1 }, limit: 3 }).then(ids)).resolves.toEqual(["d00001", "d00002", "d00003"]);
        await expect(c.find({ _id: { $in: listed }, group: 1 }, { sort: { _id: -1 }, limit: 2 }).then(ids)).resolves.toEqual(["d02998", "d02995"]);
        await expect(c.find({ _id: { $in: [...listed, "nope"], $gt: "d02990" } }).then((page) => ids(page).sort())).resolves.toEqual(["d02991", "d02992", "d02993", "d02994", "d02995", "d02996", "d02997", "d02998", "d02999"]);
        await expect(c.count({ _id: { $eq: "d00001" }, group: 1 })).resolves.toBe(1);
        await expect(c.count({ _id: "d00001", group: 2 })).resolves.toBe(0);
        // A page is a copy: changing it changes nothing stored.
        const [first] = await c.find({}, { sort: { _id: 1 }, limit: 1 });
        first!.group = 99;
        await expect(c.findOne({ _id: "d00000" })).resolves.toMatchObject({ group: 0 });
      });

      test("pages by an indexed field: dense and sparse among the candidates, small and large pages, after a cursor", async () => {
        const c = fresh();
        await c.createIndexes([{ name: "by_group", fields: { group: 1, _id: 1 } }, { name: "by_kind", fields: { kind: 1 } }]);
        const docs = Array.from({ length: 3000 }, (_, i) => ({ _id: `k${String(i).padStart(5, "0")}`, group: i % 3, kind: i < 2900 ? "bulk" : "rare" }));
        await c.insertMany([...docs].reverse());
        const walk = async (filter: Filter, limit: number) => {
          const seen: string[] = [];
          for (;;) {
            const last = seen[seen.length - 1];
            const page = await c.find({ ...filter, ...(last === undefined ? {} : { _id: { $gt: last } }) }, { sort: { _id: 1 }, limit });
            seen.push(...ids(page));
            if (page.length < limit) return seen;
          }
        };
        const expected = (keep: (d: (typeof docs)[number]) => boolean) => docs.filter(keep).map((d) => d._id);
        for (const limit of [30, 700, 1001]) {
          await expect(walk({ group: 2 }, limit)).resolves.toEqual(expected((d) => d.group === 2));
          await expect(walk({ kind: "bulk", group: 0 }, limit)).resolves.toEqual(expected((d) => d.kind === "bulk" && d.group === 0));
          await expect(walk({ kind: "rare" }, limit)).resolves.toEqual(expected((d) => d.kind === "rare"));
        }
      });

      test("insertMany and upsertMany check every document and the batch size first", async () => {
        const c = fresh();
        await expect(c.insertMany([{ _id: "ok" }, { _id: "" } as AnyDoc])).rejects.toThrow(/insertMany: document 1: .*_id/);
        await expect(c.insertMany([{ _id: "ok", bad: Number.NaN }])).rejects.toThrow(TypeError);
        await expect(c.insertMany(Array.from({ length: MAX_BATCH_DOCUMENTS + 1 }, (_, i) => ({ _id: `x${i}` })))).rejects.toThrow(
          /at most 10000 documents/,
        );
        await expect(c.upsertMany([{ _id: "only-id" }])).rejects.toThrow(/no field besides _id/);
        await expect(c.upsertMany([{ _id: "x", a: 1 }], { tenant: { $ne: "t" } } as Filter)).rejects.toThrow(/scope/);
        // Nothing of a refused batch was written.
        await expect(c.count({})).resolves.toBe(0);
      });

      test("updateMany changes every matching document and returns how many matched", async () => {
        const c = fresh();
        await c.insertMany([
          { _id: "1", state: "pending", n: 0, tags: ["a"] },
          { _id: "2", state: "pending", n: 5 },
          { _id: "3", state: "sent", n: 0, tags: ["a", "b"] },
        ]);
        await expect(c.updateMany({ _id: { $in: ["1", "2", "9"] }, state: "pending" }, { $set: { state: "queued" }, $inc: { n: 1 } })).resolves.toBe(2);
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
          { _id: "1", state: "queued", n: 1, tags: ["a"] },
          { _id: "2", state: "queued", n: 6 },
          { _id: "3", state: "sent", n: 0, tags: ["a", "b"] },
        ]);
        // A guarded batch: only documents still in the expected state move.
        await expect(c.updateMany({ state: "pending" }, { $set: { state: "queued" } })).resolves.toBe(0);
        // $pull where some documents lack the field, as updateOne.
        await expect(c.updateMany({}, { $pull: { tags: "a" } })).resolves.toBe(3);
        expect((await c.find({}, { sort: { _id: 1 } })).map((d) => d.tags)).toEqual([[], undefined, ["b"]]);
        // An update that changes nothing still counts the matches.
        await expect(c.updateMany({ state: "queued" }, { $set: {} })).resolves.toBe(2);
      });

      test("updateMany that would break a unique index throws DuplicateKeyError", async () => {
        const c = fresh();
        await c.createIndexes(emailIndex);
        await c.insertMany([
          { _id: "1", tenant: "t", email: "a@x" },
          { _id: "2", tenant: "t", email: "b@x" },
        ]);
        await expectDuplicate(c.updateMany({ tenant: "t" }, { $set: { email: "same@x" } }), "tenant_email");
      });

      test("updateEach applies each update as updateMany would, answering each one's matches", async () => {
        const c = fresh();
        await c.insertMany([
          { _id: "1", state: "pending", n: 0, history: ["queued"] },
          { _id: "2", state: "pending", n: 5 },
          { _id: "3", state: "sent", n: 0, tags: ["a", "b"] },
          { _id: "4", state: "sent", n: 0 },
          { _id: "5", state: "queued", n: 0 },
          { _id: "6", state: "queued", n: 1 },
        ]);
        await expect(
          c.updateEach([
            // A guarded outcome: matches while the state is still to be settled.
            { filter: { _id: "1", state: { $in: ["pending", "deferred"] } }, update: { $set: { state: "sent" }, $push: { history: { $each: ["sent"] } } } },
            // Already settled: no match, nothing changed.
            { filter: { _id: "3", state: "pending" }, update: { $set: { state: "failed" } } },
            // Unknown document.
            { filter: { _id: "9" }, update: { $set: { state: "sent" } } },
            { filter: { _id: "2" }, update: { $set: { state: "sent", n: 7 }, $pull: { tags: "a" } } },
            // Several documents at once.
            { filter: { state: "queued" }, update: { $inc: { n: 1 } } },
            // An update that sets nothing still counts its matches.
            { filter: { _id: "4" }, update: { $set: {} } },
          ]),
        ).resolves.toEqual([1, 0, 0, 1, 2, 1]);
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
          { _id: "1", state: "sent", n: 0, history: ["queued", "sent"] },
          { _id: "2", state: "sent", n: 7 },
          { _id: "3", state: "sent", n: 0, tags: ["a", "b"] },
          { _id: "4", state: "sent", n: 0 },
          { _id: "5", state: "queued", n: 1 },
          { _id: "6", state: "queued", n: 2 },
        ]);
        await expect(c.updateEach([])).resolves.toEqual([]);
      });

      test("updateEach checks every update before it changes anything", async () => {
        const c = fresh();
        await c.insertMany([{ _id: "1", state: "pending" }]);
        await expect(
          c.updateEach([
            { filter: { _id: "1" }, update: { $set: { state: "sent" } } },
            { filter: { _id: "1" }, update: { $set: { "bad.$field": 1 } } as never },
          ]),
        ).rejects.toThrow(/updateEach: update 1/);
        await expect(c.updateEach([{ filter: { $where: "1" } as Filter, update: { $set: { state: "sent" } } }])).rejects.toThrow(/updateEach: update 0/);
        await expect(c.updateEach(Array.from({ length: MAX_BATCH_DOCUMENTS + 1 }, () => ({ filter: { _id: "1" }, update: { $set: { state: "x" } } })))).rejects.toThrow(
          /at most 10000 updates/,
        );
        expect(await c.find({})).toEqual([{ _id: "1", state: "pending" }]);
      });

      test("updateEach that would break a unique index throws DuplicateKeyError once the updates before it are applied", async () => {
        const c = fresh();
        await c.createIndexes(emailIndex);
        await c.insertMany([
          { _id: "1", tenant: "t", email: "a@x", n: 0 },
          { _id: "2", tenant: "t", email: "b@x", n: 0 },
        ]);
        await expectDuplicate(
          c.updateEach([
            { filter: { _id: "1" }, update: { $set: { n: 1 } } },
            { filter: { _id: "2" }, update: { $set: { email: "a@x" } } },
          ]),
          "tenant_email",
        );
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
          { _id: "1", tenant: "t", email: "a@x", n: 1 },
          { _id: "2", tenant: "t", email: "b@x", n: 0 },
        ]);
      });

      test("upsertMany inserts the missing, sets the fields of the present, within its scope", async () => {
        const c = fresh();
        await c.insertMany([
          { _id: "1", tenant: "t", state: "pending", keep: true },
          { _id: "2", tenant: "u", state: "pending" },
        ]);
        const result = await c.upsertMany(
          [
            { _id: "1", state: "sent" },
            { _id: "3", state: "pending", n: 1 },
            { _id: "2", state: "sent" }, // another tenant's _id
          ],
          { tenant: "t" },
        );
        expect(result).toEqual({ inserted: 1, updated: 1, duplicates: [2] });
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
          { _id: "1", tenant: "t", state: "sent", keep: true },
          { _id: "2", tenant: "u", state: "pending" },
          { _id: "3", tenant: "t", state: "pending", n: 1 },
        ]);
        // A document whose new values would break a unique index is skipped too.
        await c.createIndexes([{ name: "state_unique", fields: { tenant: 1, n: 1 }, unique: true }]);
        await expect(c.upsertMany([{ _id: "1", n: 1 }, { _id: "4", n: 2 }], { tenant: "t" })).resolves.toEqual({
          inserted: 1,
          updated: 0,
          duplicates: [0],
        });
        await expect(c.findOne({ _id: "1" })).resolves.toEqual({ _id: "1", tenant: "t", state: "sent", keep: true });
        // Without a scope: by _id alone.
        await expect(c.upsertMany([{ _id: "2", state: "sent" }])).resolves.toEqual({ inserted: 0, updated: 1, duplicates: [] });
        await expect(c.findOne({ _id: "2" })).resolves.toEqual({ _id: "2", tenant: "u", state: "sent" });
      });
    });

    if (persistent) {
      test("batches persist across close and reopen", async () => {
        const name = freshName("batches");
        const first = await open();
        const c1 = first.collection(name);
        await c1.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: `d${i}`, state: "pending" })));
        await c1.updateMany({ _id: { $in: ["d1", "d2"] } }, { $set: { state: "sent" } });
        await c1.upsertMany([{ _id: "d3", state: "failed" }, { _id: "new", state: "pending" }]);
        await first.close();

        const second = await open();
        const c2 = second.collection(name);
        await expect(c2.count({})).resolves.toBe(301);
        await expect(c2.count({ state: "sent" })).resolves.toBe(2);
        await expect(c2.findOne({ _id: "d3" })).resolves.toEqual({ _id: "d3", state: "failed" });
        await second.close();
      });

      test("data and unique indexes persist across close and reopen", async () => {
        const name = freshName("persist");
        const first = await open();
        const c1 = first.collection(name);
        await c1.createIndexes([{ name: "tenant_email", fields: { tenant: 1, email: 1 }, unique: true }]);
        await c1.insertOne({ _id: "1", tenant: "t", email: "a@x", n: 1, nested: { list: [1, "2"] } });
        await c1.insertOne({ _id: "2", tenant: "t", email: "b@x", n: 1 });
        await c1.updateOne({ _id: "1" }, { $inc: { n: 1 }, $addToSet: { tags: { $each: ["x"] } } });
        await c1.deleteOne({ _id: "2" });
        await first.close();

        const second = await open();
        try {
          const c2 = second.collection(name);
          await expect(c2.find({})).resolves.toStrictEqual([
            { _id: "1", tenant: "t", email: "a@x", n: 2, nested: { list: [1, "2"] }, tags: ["x"] },
          ]);
          // The index survived without createIndexes being called again.
          const error = await rejection(c2.insertOne({ _id: "3", tenant: "t", email: "a@x" }));
          expect(error).toBeInstanceOf(DuplicateKeyError);
          await c2.createIndexes([{ name: "tenant_email", fields: { tenant: 1, email: 1 }, unique: true }]);
          await expectDuplicate(c2.insertOne({ _id: "3", tenant: "t", email: "a@x" }), "tenant_email");
        } finally {
          await second.close();
        }
      });
    }
  });
}
