// Counters shared by gateway replicas, on both document-store adapters: the
// MongoDB-compatible server of Jest's setup (MONGO_URL; FerretDB in CI) and
// the embedded store. Two SharedCounterStores stand for two replicas (on
// MongoDB each with its own connection). The clock is injected; the only real
// waits are the store timeouts of the fallback tests, and no assertion is on
// time.

import * as net from "node:net";
import type { AddressInfo } from "node:net";
import { openEmbeddedStore, openMongoStore, type AnyDoc, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import { counterId, RateLimiter, SharedCounterStore, type Budget, type Rate, type RateLimitPolicy } from "../src/ratelimit";
import { memoryLogger } from "./support/harness";

const url = process.env.MONGO_URL;
if (url === undefined || url === "") {
  throw new Error("MONGO_URL is not set: run through the repository's Jest config, whose globalSetup starts FerretDB");
}
const dbName = `gateway_ratelimit_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
let sequence = 0;
/** A collection of counters no other test uses. */
const freshCollection = () => `rate_limit_counters_${(sequence += 1)}`;

/** A store wrapper that counts calls and can be made to hang or fail (a fake around the real adapter). */
function controllable(store: DocumentStore) {
  const state = { mode: "ok" as "ok" | "hang" | "fail", calls: 0 };
  const wrap = <T extends Doc>(collection: Collection<T>): Collection<T> =>
    new Proxy(collection, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          state.calls += 1;
          if (state.mode === "hang") return new Promise(() => undefined);
          if (state.mode === "fail") return Promise.reject(new Error("connection refused"));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const wrapped: DocumentStore = {
    collection: <T extends Doc = AnyDoc>(name: string) => wrap(store.collection<T>(name)),
    ping: () => store.ping(),
    close: () => store.close(),
  };
  return { store: wrapped, state };
}

/** µs from ms: the stores count whole microseconds. */
const us = (ms: number) => ms * 1000;
/** A moment in µs, as a replica's clock would pass it. */
const T0 = us(1_800_000_000_000);

function manualClock(start = 1_800_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

interface Adapter {
  name: string;
  /** Two handles on one database, as two replicas would have. */
  open(): Promise<[DocumentStore, DocumentStore]>;
  close(stores: [DocumentStore, DocumentStore]): Promise<void>;
}

const adapters: Adapter[] = [
  {
    name: "MongoDB protocol (MONGO_URL)",
    open: async () => [await openMongoStore({ url, dbName }), await openMongoStore({ url, dbName })],
    close: async ([a, b]) => {
      await a.close();
      await b.close();
    },
  },
  {
    name: "embedded store",
    // One process cannot open one embedded directory twice: both replicas use one handle (their mirrors still differ).
    open: async () => {
      const store = await openEmbeddedStore({});
      return [store, store];
    },
    close: async ([a]) => a.close(),
  },
];

const rate: Rate = { limit: 10, windowMs: 10_000 };
/** Long enough that FerretDB's one-update-at-a-time never trips it: these tests are about admission, not fallback. */
const PATIENT = { timeoutMs: 60_000, sweepIntervalMs: 0 };

describe.each(adapters)("shared counters on the $name", (adapter) => {
  let stores: [DocumentStore, DocumentStore];
  beforeAll(async () => {
    stores = await adapter.open();
  });
  afterAll(async () => {
    await adapter.close(stores);
  });

  const replicas = (options: ConstructorParameters<typeof SharedCounterStore>[1] = {}) => {
    const collection = freshCollection();
    return [
      new SharedCounterStore(stores[0], { ...PATIENT, collection, ...options }),
      new SharedCounterStore(stores[1], { ...PATIENT, collection, ...options }),
    ] as const;
  };

  it("two replicas spend one budget: alternating requests get 10 in all, Remaining counting down across both", async () => {
    const [a, b] = replicas();
    const now = T0;
    const answers = [];
    for (let i = 0; i < 16; i += 1) answers.push(await (i % 2 === 0 ? a : b).consume("send.api_key.k1", rate, now));
    expect(answers.filter((r) => r.allowed)).toHaveLength(10);
    expect(answers.slice(0, 10).map((r) => r.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(answers.slice(10).every((r) => !r.allowed && r.retryAfterMs > 0)).toBe(true);
    // A unit comes back after window/limit, for either replica.
    expect((await b.consume("send.api_key.k1", rate, now + us(999))).allowed).toBe(false);
    expect((await b.consume("send.api_key.k1", rate, now + us(1000))).allowed).toBe(true);
    expect((await a.consume("send.api_key.k1", rate, now + us(1000))).allowed).toBe(false);
  });

  it("many concurrent requests on two replicas never admit more than the budget, busy or idle", async () => {
    const [a, b] = replicas();
    const big: Rate = { limit: 50, windowMs: 10_000 };
    let now = T0;
    for (let round = 0; round < 3; round += 1) {
      // Round 0: a new counter (inserts race); then idle again after a full
      // window (compare-and-set races); every round: guarded increments race.
      const results = await Promise.all(
        Array.from({ length: 120 }, (_, i) => (i % 2 === 0 ? a : b).consume("read.tenant.t1", big, now)),
      );
      expect(results.filter((r) => r.allowed)).toHaveLength(50);
      now += us(big.windowMs + 1);
    }
    expect(a.degraded || b.degraded).toBe(false);
  });

  it("a refused key is remembered: the next refusals on that replica cost no round trip", async () => {
    const wrapped = controllable(stores[0]);
    const replica = new SharedCounterStore(wrapped.store, { ...PATIENT, collection: freshCollection() });
    const now = T0;
    for (let i = 0; i < 11; i += 1) await replica.consume("send.api_key.flood", rate, now);
    const before = wrapped.state.calls;
    for (let i = 0; i < 100; i += 1) expect((await replica.consume("send.api_key.flood", rate, now + us(i))).allowed).toBe(false);
    expect(wrapped.state.calls).toBe(before);
    // Once the mirror says a unit is back, the store is asked again.
    expect((await replica.consume("send.api_key.flood", rate, now + us(1000))).allowed).toBe(true);
    expect(wrapped.state.calls).toBeGreaterThan(before);
  });

  it("an admitted request costs one round trip per counter, busy or idle; a new counter two", async () => {
    const wrapped = controllable(stores[0]);
    const collection = freshCollection();
    const replica = new SharedCounterStore(wrapped.store, { ...PATIENT, collection });
    const other = new SharedCounterStore(wrapped.store, { ...PATIENT, collection });
    const tripsOf = async (store: SharedCounterStore, at: number) => {
      const before = wrapped.state.calls;
      expect((await store.consume("read.api_key.k", rate, at)).allowed).toBe(true);
      return wrapped.state.calls - before;
    };
    expect(await tripsOf(replica, T0)).toBe(2); // new: the idle write finds nothing, then the insert
    expect(await tripsOf(replica, T0 + us(10))).toBe(1); // busy: the guarded increment
    expect(await tripsOf(replica, T0 + us(60_000))).toBe(1); // idle again: the guarded set
    // Busy, but never seen by this replica: idle write, insert (duplicate), increment; then one.
    expect(await tripsOf(other, T0 + us(60_010))).toBe(3);
    expect(await tripsOf(other, T0 + us(60_020))).toBe(1);
  });

  it("the limiter over two replicas: key and tenant budgets, all or nothing", async () => {
    const [a, b] = replicas();
    const clock = manualClock();
    const policy: RateLimitPolicy = {
      budgets: [
        { rateClass: "write", kind: "api_key", limit: 4, windowMs: 10_000 },
        { rateClass: "write", kind: "tenant", limit: 6, windowMs: 10_000 },
      ],
    };
    const one = new RateLimiter(policy, a, { now: clock.now });
    const two = new RateLimiter(policy, b, { now: clock.now });
    const keys = (key: string) => ({ api_key: key, tenant: "acc_1:live" });
    const k1 = [];
    for (let i = 0; i < 5; i += 1) k1.push((await (i % 2 ? one : two).consume("write", keys("key_1"))).allowed);
    expect(k1).toEqual([true, true, true, true, false]);
    const k2 = [];
    for (let i = 0; i < 4; i += 1) k2.push((await (i % 2 ? two : one).consume("write", keys("key_2"))).allowed);
    expect(k2).toEqual([true, true, false, false]);
    // key_2's refused requests took nothing from key_2's own budget (refunded or never taken).
    const budget2: Budget = policy.budgets[0]!;
    clock.advance(10_000);
    const fresh = await one.consume("write", keys("key_2"));
    expect(fresh.budgets.find((s) => s.budget.kind === "api_key")?.remaining).toBe(budget2.limit - 1);
  });

  it("expired counters are swept; live ones stay", async () => {
    const collection = freshCollection();
    const replica = new SharedCounterStore(stores[0], { ...PATIENT, collection });
    const now = T0;
    for (let i = 0; i < 5; i += 1) await replica.consume(`read.api_key.idle${i}`, rate, now);
    await replica.consume("read.api_key.busy", rate, now + us(5000));
    const docs = stores[0].collection(collection);
    expect(await docs.count({})).toBe(6);
    expect(await replica.sweep(now + us(2000))).toBe(5);
    expect(await docs.count({})).toBe(1);
    // A swept counter is a full budget, as before.
    expect(await replica.consume("read.api_key.idle0", rate, now + us(2000))).toMatchObject({ allowed: true, remaining: 9 });
  });

  it("counter ids carry no key: a digest of fixed length", () => {
    const id = counterId({ rateClass: "auth_failure", kind: "client_address", limit: 1, windowMs: 1000 }, "203.0.113.7");
    expect(id).toMatch(/^auth_failure\.client_address\.[A-Za-z0-9_-]{22}$/);
    expect(id).not.toContain("203.0.113.7");
  });

  describe("when the store is slow or failing: fail open to this replica's own budget", () => {
    it("a hanging store: decisions come from the mirror after the timeout, budgets still hold, and the store is asked again later", async () => {
      const wrapped = controllable(stores[0]);
      const { logger, logs } = memoryLogger();
      const replica = new SharedCounterStore(wrapped.store, {
        // Long enough for a loaded machine's FerretDB to answer when it should;
        // the hanging store makes the test wait for it once.
        timeoutMs: 2000,
        retryAfterFailureMs: 5000,
        sweepIntervalMs: 0,
        collection: freshCollection(),
        logger,
      });
      const now = T0;
      for (let i = 0; i < 4; i += 1) await replica.consume("send.tenant.t", rate, now);
      wrapped.state.mode = "hang";
      const during = [];
      for (let i = 0; i < 10; i += 1) during.push(await replica.consume("send.tenant.t", rate, now + us(1)));
      // 4 taken before the outage, so 6 more: the mirror continued where the store was.
      expect(during.filter((r) => r.allowed)).toHaveLength(6);
      expect(replica.degraded).toBe(true);
      // One timeout, then no more calls until retryAfterFailureMs has passed.
      const callsWhileDown = wrapped.state.calls;
      await replica.consume("send.tenant.t", rate, now + us(4999));
      expect(wrapped.state.calls).toBe(callsWhileDown);
      const warnings = logs.filter((l) => l.msg.includes("enforces the budgets alone"));
      expect(warnings).toHaveLength(1);
      expect(JSON.stringify(warnings)).not.toContain("send.tenant");

      wrapped.state.mode = "ok";
      const back = await replica.consume("send.tenant.t", rate, now + us(5001));
      expect(wrapped.state.calls).toBeGreaterThan(callsWhileDown);
      expect(replica.degraded).toBe(false);
      // The store holds the 4 units taken before the outage (refilled by now),
      // the mirror the 11 taken in all: the request is admitted by the store,
      // and the mirror keeps its stricter view until it has passed.
      expect(back.allowed).toBe(true);
      expect((await replica.peek("send.tenant.t", rate, now + us(5001))).remaining).toBe(4);
      expect(logs.some((l) => l.msg.includes("answering again"))).toBe(true);
    });

    it("a failing store: no request fails, refunds included; decisions are local", async () => {
      const wrapped = controllable(stores[0]);
      const replica = new SharedCounterStore(wrapped.store, { timeoutMs: 1000, sweepIntervalMs: 0, collection: freshCollection() });
      wrapped.state.mode = "fail";
      const now = T0;
      const results = [];
      for (let i = 0; i < 12; i += 1) results.push(await replica.consume("write.api_key.k", rate, now));
      expect(results.filter((r) => r.allowed)).toHaveLength(10);
      await expect(replica.refund("write.api_key.k", rate, now)).resolves.toBeUndefined();
      expect(replica.degraded).toBe(true);
    });
  });
});

describe("shared counters when the MongoDB server goes away (a TCP proxy in front of it, cut)", () => {
  let proxy: net.Server;
  let sockets = new Set<net.Socket>();
  let port = 0;
  const target = new URL(url);

  const listen = () =>
    new Promise<void>((resolve) => {
      proxy = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname);
        sockets.add(client).add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on("error", drop).on("close", drop).pipe(upstream);
        upstream.on("error", drop).on("close", drop).pipe(client);
      });
      proxy.listen(port, "127.0.0.1", () => {
        port = (proxy.address() as AddressInfo).port;
        resolve();
      });
    });
  const cut = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      sockets = new Set();
      proxy.close(() => resolve());
    });

  afterAll(async () => {
    if (proxy.listening) await cut();
  });

  it("decisions go on locally while it is gone, and shared again once it is back", async () => {
    await listen();
    const store = await openMongoStore({ url: `mongodb://127.0.0.1:${port}/?directConnection=true`, dbName, serverSelectionTimeoutMS: 2000 });
    const { logger, logs } = memoryLogger();
    const collection = freshCollection();
    const replica = new SharedCounterStore(store, { timeoutMs: 2000, retryAfterFailureMs: 1000, sweepIntervalMs: 0, collection, logger });
    const now = T0;
    try {
      for (let i = 0; i < 3; i += 1) expect((await replica.consume("read.api_key.k", rate, now)).allowed).toBe(true);
      await cut();
      const during = [];
      for (let i = 0; i < 10; i += 1) during.push(await replica.consume("read.api_key.k", rate, now));
      expect(during.filter((r) => r.allowed)).toHaveLength(7);
      expect(replica.degraded).toBe(true);
      expect(logs.filter((l) => l.level === 40)).toHaveLength(1);

      await listen();
      // The driver reconnects on its own; the replica asks again once retryAfterFailureMs has passed on its clock.
      let shared = false;
      for (let attempt = 0; attempt < 50 && !shared; attempt += 1) {
        await replica.consume("read.api_key.other", rate, now + us(2000 + attempt * 2000));
        shared = !replica.degraded;
        if (!shared) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(shared).toBe(true);
      // What the shared store holds: the 3 units taken before the cut (the
      // local decisions during it were never written there).
      const doc = await store.collection<{ _id: string; tat: number }>(collection).findOne({ _id: "read.api_key.k" });
      expect(doc?.tat).toBe(now + us(3 * 1000));
    } finally {
      await store.close();
    }
  });
});
