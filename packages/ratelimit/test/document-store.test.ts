// The shared counter store (RATE_LIMIT_STORE=mongo) on both adapters of the
// document-store port: the embedded store, and the MongoDB-compatible server
// of MONGO_URL (FerretDB in CI, started by Jest's global setup). Two
// DocumentCounterStores on one database are two gateway replicas. The clock
// is moved by hand.

import { MongoClient } from "mongodb";
import { openEmbeddedStore, openMongoStore, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import { DocumentCounterStore, type DocumentCounterStoreOptions } from "../src/document-store";
import type { Bucket, Policy } from "../src/gcra";
import { memoryLogger } from "@emailsvc/testing";

const T0 = 1_700_000_000_000;
const url = process.env.MONGO_URL;
const dbName = `gateway_ratelimit_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
let sequence = 0;

interface Pair {
  /** Two connections to one database, as two replicas have. */
  stores: [DocumentStore, DocumentStore];
  close(): Promise<void>;
}

const adapters: Array<[string, () => Promise<Pair>]> = [
  [
    "embedded",
    async () => {
      const store = await openEmbeddedStore();
      return { stores: [store, store], close: () => store.close() };
    },
  ],
];
if (url) {
  adapters.push([
    "mongo",
    async () => {
      const a = await openMongoStore({ url, dbName });
      const b = await openMongoStore({ url, dbName });
      return { stores: [a, b], close: async () => void (await Promise.all([a.close(), b.close()])) };
    },
  ]);
  afterAll(async () => {
    const client = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
    await client.db(dbName).dropDatabase();
    await client.close();
  });
} else {
  test("MONGO_URL is set", () => {
    throw new Error("MONGO_URL is not set: run through the repository's Jest config, whose globalSetup starts FerretDB");
  });
}

/** A new collection name per test, so that tests never share buckets. */
const fresh = () => `rate_limits_${Date.now().toString(36)}_${++sequence}`;

describe.each(adapters)("shared counter store on %s", (_name, openPair) => {
  let pair: Pair;
  beforeAll(async () => {
    pair = await openPair();
  });
  afterAll(() => pair.close());

  /** Two replicas' stores on one (new) collection. */
  async function replicas(options: DocumentCounterStoreOptions = {}): Promise<[DocumentCounterStore, DocumentCounterStore]> {
    const collection = fresh();
    const base = { collection, sweepIntervalMs: 0, timeoutMs: 30_000, ...options };
    return [await DocumentCounterStore.open(pair.stores[0], base), await DocumentCounterStore.open(pair.stores[1], base)];
  }

  const policy: Policy = { limit: 5, windowMs: 5000 };
  const bucket = (key = "k:key_1:read", p = policy): Bucket => ({ key, policy: p });

  it("admits a whole budget of 7 per 10 s at once, on both replicas' view of it (intervals of 1428.57… ms add up exactly)", async () => {
    const [a, b] = await replicas();
    const seven = bucket("k:key_7:read", { limit: 7, windowMs: 10_000 });
    const remaining = [];
    for (let i = 0; i < 7; i++) {
      const outcome = await (i % 2 ? b : a).consume([seven], T0);
      expect(outcome.allowed).toBe(true);
      remaining.push(outcome.states[0]!.remaining);
    }
    expect(remaining).toEqual([6, 5, 4, 3, 2, 1, 0]);
    expect((await b.consume([seven], T0)).allowed).toBe(false);
  });

  it("admits the budget, refuses with the wait, and admits again when time has passed", async () => {
    const [a] = await replicas();
    for (let i = 0; i < 5; i++) {
      const outcome = await a.consume([bucket()], T0);
      expect(outcome).toMatchObject({ allowed: true, states: [{ limit: 5, remaining: 4 - i }] });
    }
    const refused = await a.consume([bucket()], T0);
    expect(refused).toMatchObject({ allowed: false, refusedBy: [0], states: [{ remaining: 0 }] });
    expect(refused.retryAfterMs).toBeCloseTo(1000, 3);
    expect((await a.consume([bucket()], T0 + 999)).allowed).toBe(false);
    expect(await a.consume([bucket()], T0 + 1000)).toMatchObject({ allowed: true, states: [{ remaining: 0 }] });
    expect(await a.consume([bucket()], T0 + 60_000)).toMatchObject({ allowed: true, states: [{ remaining: 4 }] });
  });

  it("charges a cost of many at once: admitted while the room lasts, refused whole with the wait for all of it, shared by replicas", async () => {
    const [a, b] = await replicas();
    const ten: Policy = { limit: 10, windowMs: 1000 };
    const batch = (cost: number): Bucket => ({ key: "c:acc_x:campaign", policy: ten, cost });
    expect(await a.consume([batch(6)], T0)).toMatchObject({ allowed: true, states: [{ remaining: 4 }] });
    const refused = await b.consume([batch(5)], T0);
    expect(refused).toMatchObject({ allowed: false, states: [{ remaining: 4 }] });
    expect(refused.retryAfterMs).toBeCloseTo(100, 3);
    expect(await b.consume([batch(4)], T0)).toMatchObject({ allowed: true, states: [{ remaining: 0 }] });
    expect((await a.consume([batch(1)], T0)).allowed).toBe(false);
    // Half a window later half the limit is back.
    expect(await a.consume([batch(5)], T0 + 500)).toMatchObject({ allowed: true, states: [{ remaining: 0 }] });
  });

  it("gives a charge back to the shared budget (another replica sees the room), and never beyond a full bucket", async () => {
    const [a, b] = await replicas();
    for (let i = 0; i < 5; i++) expect((await a.consume([bucket("r:acc_r")], T0)).allowed).toBe(true);
    await a.refund(bucket("r:acc_r"), T0);
    expect(await b.consume([bucket("r:acc_r")], T0)).toMatchObject({ allowed: true, states: [{ remaining: 0 }] });
    expect((await a.consume([bucket("r:acc_r")], T0)).allowed).toBe(false);
    // A bucket full again has nothing to give back: refunds then add no room beyond the budget.
    await a.refund(bucket("r:acc_r"), T0 + 60_000);
    await b.refund(bucket("r:acc_r"), T0 + 60_000);
    for (let i = 0; i < 5; i++) expect((await b.consume([bucket("r:acc_r")], T0 + 60_000)).allowed).toBe(true);
    expect((await a.consume([bucket("r:acc_r")], T0 + 60_000)).allowed).toBe(false);
  });

  it("two replicas share one budget: together they admit the budget, not twice it", async () => {
    const [a, b] = await replicas();
    const admitted = { a: 0, b: 0 };
    for (let i = 0; i < 12; i++) {
      const [name, replica] = i % 2 === 0 ? (["a", a] as const) : (["b", b] as const);
      if ((await replica.consume([bucket()], T0)).allowed) admitted[name] += 1;
    }
    expect(admitted.a + admitted.b).toBe(5);
    expect(admitted.a).toBeGreaterThan(0);
    expect(admitted.b).toBeGreaterThan(0);
    // Each replica now knows the bucket is spent: further refusals ask nothing of the store.
    const before = a.stats.operations + b.stats.operations;
    for (let i = 0; i < 20; i++) expect((await (i % 2 ? a : b).consume([bucket()], T0 + 10)).allowed).toBe(false);
    expect(a.stats.operations + b.stats.operations).toBe(before);
    // The budget recovers for both: one per emission interval, shared.
    expect((await b.consume([bucket()], T0 + 1000)).allowed).toBe(true);
    expect((await a.consume([bucket()], T0 + 1000)).allowed).toBe(false);
  });

  it("admits no more than the budget to concurrent requests on two replicas", async () => {
    const [a, b] = await replicas();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).consume([bucket("k:busy:send")], T0)));
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
    // What each was told adds up: the admitted saw Remaining 4, 3, 2, 1, 0 once each.
    const remaining = results.filter((r) => r.allowed).map((r) => r.states[0]!.remaining);
    expect(remaining.sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it("costs one store operation per bucket when the replica's view is right", async () => {
    const [a] = await replicas();
    const key = bucket("k:steady:read", { limit: 1000, windowMs: 1000 });
    const tenant = bucket("t:acc:live:read", { limit: 2000, windowMs: 1000 });
    await a.consume([key, tenant], T0); // first sight: set fails, insert (2 each)
    const before = a.stats.operations;
    for (let i = 1; i <= 50; i++) expect((await a.consume([key, tenant], T0 + i)).allowed).toBe(true);
    expect(a.stats.operations - before).toBe(100);
    // After a pause longer than the window the bucket is full: still one write each ($set).
    const later = a.stats.operations;
    expect((await a.consume([key, tenant], T0 + 10_000)).allowed).toBe(true);
    expect(a.stats.operations - later).toBe(2);
  });

  it("costs one write per bucket also when replicas take turns on it", async () => {
    const [a, b] = await replicas();
    const key = bucket("k:shared:read", { limit: 1000, windowMs: 1000 });
    await a.consume([key], T0);
    await b.consume([key], T0); // b's first sight: set, insert, read, $inc
    const before = a.stats.operations + b.stats.operations;
    // A busy bucket (partly used): each replica's view is stale by the other's writes, yet right enough.
    for (let i = 1; i <= 40; i++) expect((await (i % 2 ? a : b).consume([key], T0 + i / 10)).allowed).toBe(true);
    expect(a.stats.operations + b.stats.operations - before).toBe(40);
  });

  it("charges the key and the tenant together or not at all", async () => {
    const [a, b] = await replicas();
    const small: Policy = { limit: 2, windowMs: 2000 };
    const tenant = bucket("t:acc:test:send", { limit: 3, windowMs: 3000 });
    const key1 = bucket("k:key_1:send", small);
    const key2 = bucket("k:key_2:send", small);
    expect((await a.consume([key1, tenant], T0)).allowed).toBe(true);
    expect((await b.consume([key2, tenant], T0)).allowed).toBe(true);
    expect((await b.consume([key2, tenant], T0)).allowed).toBe(true);
    // The tenant is spent (by replica b): key1 still has one, which must not be taken.
    const refused = await a.consume([key1, tenant], T0);
    expect(refused).toMatchObject({ allowed: false, refusedBy: [1] });
    // key1 still holds its second request, in the shared store (asked through
    // the other replica): the refusal took nothing from it.
    expect((await b.consume([key1], T0)).allowed).toBe(true);
    expect((await b.consume([key1], T0)).allowed).toBe(false);
  });

  it("sweeps documents of buckets full for a minute, and only those", async () => {
    const collection = fresh();
    const counters = await DocumentCounterStore.open(pair.stores[0], { collection, sweepIntervalMs: 0 });
    await counters.consume([bucket("k:old:read")], T0);
    await counters.consume([bucket("k:recent:read")], T0 + 100_000);
    const docs: Collection<Doc> = pair.stores[0].collection(collection);
    expect(await docs.count({})).toBe(2);
    expect(await counters.sweep(T0 + 100_000)).toBe(1);
    expect((await docs.find({})).map((d) => d._id)).toEqual(["k:recent:read"]);
    // A swept bucket starts full, as if never seen.
    expect(await counters.consume([bucket("k:old:read")], T0 + 100_000)).toMatchObject({ allowed: true, states: [{ remaining: 4 }] });
  });

  describe("when the store fails", () => {
    it("counts per replica (neither open nor closed) and goes back to the store once it answers", async () => {
      const flaky = new FlakyStore(pair.stores[0]);
      const { logger, logs } = memoryLogger();
      const counters = await DocumentCounterStore.open(flaky, { collection: fresh(), sweepIntervalMs: 0, backoffMs: 1000, logger });
      expect((await counters.consume([bucket()], T0)).allowed).toBe(true);
      flaky.down = true;
      // Limits still hold, from this replica's own counters: 4 more, then refusals.
      const during = await Promise.all(Array.from({ length: 8 }, () => counters.consume([bucket()], T0)));
      expect(during.filter((o) => o.allowed)).toHaveLength(4);
      expect(counters.degraded).toBe(true);
      expect(logs.filter((l) => /rate-limit store unavailable/.test(l.msg))).toHaveLength(1);
      // The store is not asked again until the back-off has passed.
      const attempts = flaky.calls;
      await counters.consume([bucket("k:other:read")], T0 + 500);
      expect(flaky.calls).toBe(attempts);
      flaky.down = false;
      expect((await counters.consume([bucket("k:other:read")], T0 + 1500)).allowed).toBe(true);
      expect(counters.degraded).toBe(false);
      expect(logs.filter((l) => /rate-limit store reachable again/.test(l.msg))).toHaveLength(1);
    });

    it("does not wait for a store slower than the timeout", async () => {
      const flaky = new FlakyStore(pair.stores[0]);
      const counters = await DocumentCounterStore.open(flaky, { collection: fresh(), sweepIntervalMs: 0, timeoutMs: 20 });
      flaky.stalled = true;
      const outcome = await counters.consume([bucket()], T0);
      expect(outcome).toMatchObject({ allowed: true, states: [{ remaining: 4 }] });
      expect(counters.stats.fallbacks).toBe(1);
      flaky.release();
    });
  });
});

/**
 * A document store in front of a real one that can fail (`down`: every call
 * rejects) or stall (`stalled`: calls wait until `release()`); a unit-test
 * stand-in for an outage, around the real adapter.
 */
class FlakyStore implements DocumentStore {
  down = false;
  stalled = false;
  calls = 0;
  private waiting: Array<() => void> = [];

  constructor(private readonly inner: DocumentStore) {}

  release(): void {
    this.stalled = false;
    for (const go of this.waiting.splice(0)) go();
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    const real = this.inner.collection<T>(name);
    const guard =
      <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        this.calls += 1;
        if (this.down) throw new Error("connection refused");
        if (this.stalled) await new Promise<void>((resolve) => this.waiting.push(resolve));
        return call(...args);
      };
    return {
      createIndexes: guard(real.createIndexes.bind(real)),
      insertOne: guard(real.insertOne.bind(real)),
      findOne: guard(real.findOne.bind(real)),
      find: guard(real.find.bind(real)),
      count: guard(real.count.bind(real)),
      countBy: guard(real.countBy.bind(real)),
      updateOne: guard(real.updateOne.bind(real)),
      insertMany: guard(real.insertMany.bind(real)),
      updateMany: guard(real.updateMany.bind(real)),
      updateEach: guard(real.updateEach.bind(real)),
      upsertMany: guard(real.upsertMany.bind(real)),
      deleteOne: guard(real.deleteOne.bind(real)),
      deleteMany: guard(real.deleteMany.bind(real)),
      compact: guard(real.compact.bind(real)),
    };
  }

  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
