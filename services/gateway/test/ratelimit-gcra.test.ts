// The rate-limit algorithm (GCRA), the memory store and the limiter, on an
// injected clock: no sleeping, no timed assertions.

import {
  DEFAULT_BUDGETS,
  gcraConsume,
  gcraPeek,
  MemoryCounterStore,
  RateLimiter,
  type Budget,
  type Rate,
  type RateLimitPolicy,
} from "../src/ratelimit";

/** A clock the test moves by hand. */
function manualClock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms), set: (ms: number) => (now = ms) };
}

/** Seeded PRNG (mulberry32): the same "random" traffic on every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const budget = (rateClass: Budget["rateClass"], kind: Budget["kind"], limit: number, windowSeconds: number): Budget => ({
  rateClass,
  kind,
  limit,
  windowMs: windowSeconds * 1000,
});

/** µs from ms: the algorithm and the stores count whole microseconds. */
const us = (ms: number) => ms * 1000;

describe("GCRA", () => {
  const rate: Rate = { limit: 4, windowMs: 1000 }; // a unit every 250 ms

  it("admits `limit` at once from a full budget, counting Remaining down, then refuses with the exact wait", () => {
    let tat: number | undefined;
    const remaining: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const r = gcraConsume(tat, 0, rate);
      expect(r.allowed).toBe(true);
      remaining.push(r.remaining);
      tat = r.tat;
    }
    expect(remaining).toEqual([3, 2, 1, 0]);
    expect(gcraConsume(tat, 0, rate)).toEqual({ allowed: false, tat, remaining: 0, retryAfterMs: 250, resetMs: 1000 });
  });

  it("a whole budget fits at once whatever the rate, also at today's epoch (whole µs, no drift)", () => {
    for (const [limit, windowMs] of [[6, 10_000], [7, 1000], [1000, 60_000], [3, 1000], [10_000, 1000]] as const) {
      const r: Rate = { limit, windowMs };
      const now = us(Date.now());
      let tat: number | undefined;
      let admitted = 0;
      for (let i = 0; i < limit + 1; i += 1) {
        const res = gcraConsume(tat, now, r);
        if (res.allowed) {
          admitted += 1;
          tat = res.tat;
          expect(res.remaining).toBe(limit - admitted);
        }
      }
      expect(admitted).toBe(limit);
    }
  });

  it("refills one unit every window/limit, continuously: no window edge to burst across", () => {
    // Spend the whole budget just before a 'window' would end...
    let tat: number | undefined;
    for (let i = 0; i < 4; i += 1) tat = gcraConsume(tat, us(999), rate).tat;
    // ...and just after it a fixed window would be full again; GCRA has refilled 2 ms' worth: nothing.
    expect(gcraConsume(tat, us(1001), rate).allowed).toBe(false);
    // One unit after 250 ms, not before.
    expect(gcraConsume(tat, us(999 + 249.999), rate).allowed).toBe(false);
    const one = gcraConsume(tat, us(999 + 250), rate);
    expect(one).toMatchObject({ allowed: true, remaining: 0 });
    expect(gcraConsume(one.tat, us(999 + 250), rate).allowed).toBe(false);
  });

  it("peek reports Remaining and Reset without taking anything", () => {
    let tat: number | undefined;
    for (let i = 0; i < 4; i += 1) tat = gcraConsume(tat, 0, rate).tat; // full again at 1000 ms
    expect(gcraPeek(tat, us(500), rate)).toMatchObject({ allowed: true, remaining: 2, resetMs: 500, retryAfterMs: 0 });
    expect(gcraPeek(tat, 0, rate)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 250 });
    expect(gcraPeek(tat, us(5000), rate)).toMatchObject({ allowed: true, remaining: 4, resetMs: 0 });
  });

  it("a forced charge takes a unit past the budget, at most two windows ahead", () => {
    let tat: number | undefined;
    for (let i = 0; i < 50; i += 1) {
      const r = gcraConsume(tat, 0, rate, { force: true });
      expect(r.allowed).toBe(true);
      tat = r.tat;
    }
    expect(tat).toBe(us(2000));
    expect(gcraPeek(tat, 0, rate).retryAfterMs).toBe(1250);
  });

  it("decides exactly like a token bucket of `limit` tokens refilled at limit/window (reference model, random traffic)", () => {
    const r: Rate = { limit: 4, windowMs: 1000 }; // I = 250 ms: exact in binary floating point
    const random = prng(42);
    let tat: number | undefined;
    // Tokens counted in ms of refill (250 per token), so the model is exact integer arithmetic.
    let tokens = r.limit * 250;
    let last = 0;
    let t = 0;
    let admitted = 0;
    for (let i = 0; i < 20_000; i += 1) {
      t += Math.floor(random() * 400);
      tokens = Math.min(r.limit * 250, tokens + (t - last));
      last = t;
      const bucket = tokens >= 250;
      if (bucket) tokens -= 250;
      const gcra = gcraConsume(tat, us(t), r);
      expect(gcra.allowed).toBe(bucket);
      expect(gcra.remaining).toBe(Math.floor(tokens / 250));
      if (gcra.allowed) {
        tat = gcra.tat;
        admitted += 1;
      }
    }
    expect(admitted).toBeGreaterThan(10_000); // the traffic did hit the limit and the refill both ways
    expect(admitted).toBeLessThan(20_000);
  });

  it("never admits more than limit + elapsed/interval in any stretch of time (random traffic)", () => {
    const r: Rate = { limit: 10, windowMs: 1000 };
    const random = prng(7);
    const times: number[] = [];
    let tat: number | undefined;
    let t = 0;
    for (let i = 0; i < 5000; i += 1) {
      t += random() < 0.9 ? 0 : Math.floor(random() * 300);
      const res = gcraConsume(tat, us(t), r);
      if (res.allowed) {
        tat = res.tat;
        times.push(t);
      }
    }
    // For every pair of admitted requests i ≤ j: j - i + 1 ≤ limit + (t_j - t_i) / interval.
    const violations: string[] = [];
    for (let i = 0; i < times.length; i += 1) {
      for (let j = i; j < Math.min(times.length, i + 60); j += 1) {
        if (j - i + 1 > r.limit + (times[j]! - times[i]!) / 100 + 1e-9) violations.push(`${i}..${j}`);
      }
    }
    expect(times.length).toBeGreaterThan(500);
    expect(violations).toEqual([]);
  });
});

describe("memory store", () => {
  const rate: Rate = { limit: 2, windowMs: 1000 };

  it("concurrent consumes of one key never admit more than the budget", async () => {
    const store = new MemoryCounterStore();
    const results = await Promise.all(Array.from({ length: 1000 }, () => store.consume("k", { limit: 100, windowMs: 10_000 }, 5)));
    expect(results.filter((r) => r.allowed)).toHaveLength(100);
  });

  it("drops idle keys as it writes: a new key every ms for 20 s holds about 500 keys, not 20,000", () => {
    const store = new MemoryCounterStore();
    let max = 0;
    for (let t = 0; t < 20_000; t += 1) {
      store.consumeSync(`guess-${t}`, rate, us(t));
      max = Math.max(max, store.size);
    }
    // Each key's TAT is its write + 500 ms: the front of the map is idle
    // after half a second, so about 500 keys are held at any time.
    expect(max).toBeLessThanOrEqual(502);
    expect(store.evictions).toBe(0);
    store.sweep(us(30_000));
    expect(store.size).toBe(0);
  });

  it("caps the number of keys: past maxKeys the least recently written is forgotten", async () => {
    const store = new MemoryCounterStore({ maxKeys: 1000 });
    for (let i = 0; i < 5000; i += 1) await store.consume(`k${i}`, { limit: 1, windowMs: 3_600_000 }, 0);
    expect(store.size).toBe(1000);
    expect(store.evictions).toBe(4000);
    // The newest are kept (refused again), the oldest were forgotten (a full budget again).
    expect((await store.consume("k4999", { limit: 1, windowMs: 3_600_000 }, 1)).allowed).toBe(false);
    expect((await store.consume("k0", { limit: 1, windowMs: 3_600_000 }, 1)).allowed).toBe(true);
  });

  it("a refund gives one unit back", async () => {
    const store = new MemoryCounterStore();
    await store.consume("k", rate, 0);
    await store.consume("k", rate, 0);
    expect((await store.peek("k", rate, 0)).allowed).toBe(false);
    await store.refund("k", rate, 0);
    expect(await store.peek("k", rate, 0)).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe("RateLimiter", () => {
  const policy: RateLimitPolicy = {
    budgets: [budget("read", "api_key", 5, 10), budget("read", "tenant", 8, 10), budget("send", "api_key", 2, 10)],
  };
  const keysOf = (key: string) => ({ api_key: key, tenant: "acc_1:live" });

  it("takes from the key's and the tenant's budget; the tenant's is shared by the account's keys", async () => {
    const clock = manualClock();
    const limiter = new RateLimiter(policy, new MemoryCounterStore(), { now: clock.now });
    const a = await Promise.all(Array.from({ length: 6 }, () => limiter.consume("read", keysOf("key_a"))));
    expect(a.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
    expect(a[5]!.binding?.budget.kind).toBe("api_key");
    const b: boolean[] = [];
    for (let i = 0; i < 5; i += 1) b.push((await limiter.consume("read", keysOf("key_b"))).allowed);
    // 5 of the tenant's 8 went to key A: key B gets 3, then the tenant refuses.
    expect(b).toEqual([true, true, true, false, false]);
    const refused = await limiter.consume("read", keysOf("key_b"));
    expect(refused.binding?.budget.kind).toBe("tenant");
    // All or nothing: the refused requests took nothing from key B's own budget.
    const peek = await limiter.peek("read", keysOf("key_b"));
    expect(peek.budgets.find((s) => s.budget.kind === "api_key")?.remaining).toBe(2);
  });

  it("gives back what one budget took when another refuses (concurrent requests both saw a unit left)", async () => {
    const clock = manualClock();
    const limiter = new RateLimiter(policy, new MemoryCounterStore(), { now: clock.now });
    for (let i = 0; i < 7; i += 1) await limiter.consume("read", keysOf(`key_${i}`));
    // One unit left in the tenant's budget; both requests see it before either takes it.
    const racing = await Promise.all([limiter.consume("read", keysOf("key_x")), limiter.consume("read", keysOf("key_x"))]);
    expect(racing.map((d) => d.allowed).sort()).toEqual([false, true]);
    expect(racing.find((d) => !d.allowed)?.binding?.budget.kind).toBe("tenant");
    // Key X's own budget lost one unit (the admitted request), not two.
    const peek = await limiter.peek("read", keysOf("key_x"));
    expect(peek.budgets.find((s) => s.budget.kind === "api_key")?.remaining).toBe(4);
  });

  it("classes have separate budgets", async () => {
    const clock = manualClock();
    const limiter = new RateLimiter(policy, new MemoryCounterStore(), { now: clock.now });
    await limiter.consume("send", { api_key: "k" });
    await limiter.consume("send", { api_key: "k" });
    expect((await limiter.consume("send", { api_key: "k" })).allowed).toBe(false);
    expect((await limiter.consume("read", keysOf("k"))).allowed).toBe(true);
  });

  it("the binding budget is the one closest to running out; Remaining and Reset follow the clock", async () => {
    const clock = manualClock();
    const limiter = new RateLimiter(policy, new MemoryCounterStore(), { now: clock.now });
    const first = await limiter.consume("read", keysOf("k"));
    expect(first.binding).toMatchObject({ remaining: 4, resetMs: 2000 });
    expect(first.binding?.budget.kind).toBe("api_key");
    for (let i = 0; i < 4; i += 1) await limiter.consume("read", keysOf("k"));
    const refused = await limiter.consume("read", keysOf("k"));
    expect(refused).toMatchObject({ allowed: false });
    expect(refused.binding).toMatchObject({ remaining: 0, retryAfterMs: 2000, resetMs: 10_000 });
    clock.advance(1999);
    expect((await limiter.consume("read", keysOf("k"))).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.consume("read", keysOf("k"))).allowed).toBe(true);
  });

  it("a charge counts past the budget and the next peek refuses until it has refilled", async () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ budgets: [budget("auth_failure", "client_address", 3, 60)] }, new MemoryCounterStore(), {
      now: clock.now,
    });
    const keys = { client_address: "192.0.2.1" };
    for (let i = 0; i < 5; i += 1) await limiter.charge("auth_failure", keys);
    const peek = await limiter.peek("auth_failure", keys);
    expect(peek.allowed).toBe(false);
    // 5 charged of 3 per 60 s: the 4th unit frees 3 · 20 s after the 3rd was due.
    expect(peek.binding?.retryAfterMs).toBe(60_000);
    clock.advance(60_000);
    expect((await limiter.peek("auth_failure", keys)).allowed).toBe(true);
  });

  it("with no budgets (RATE_LIMITS=off) admits everything and reports nothing", async () => {
    const limiter = new RateLimiter({ budgets: [] }, new MemoryCounterStore());
    expect(limiter.enabled).toBe(false);
    for (let i = 0; i < 100; i += 1) {
      expect(await limiter.consume("send", { api_key: "k", tenant: "t" })).toEqual({ allowed: true, budgets: [], binding: undefined });
    }
  });

  it("refuses to run a budget whose key is not given (a wiring mistake, not unlimited)", async () => {
    const limiter = new RateLimiter(policy, new MemoryCounterStore());
    await expect(limiter.consume("read", { api_key: "k" })).rejects.toThrow(/read\/tenant: no tenant key given/);
  });

  it("refuses a policy with two budgets of one class and kind, or a window in fractions of seconds", () => {
    expect(() => new RateLimiter({ budgets: [budget("read", "tenant", 1, 1), budget("read", "tenant", 2, 1)] }, new MemoryCounterStore())).toThrow(
      /two budgets/,
    );
    expect(
      () => new RateLimiter({ budgets: [{ rateClass: "read", kind: "tenant", limit: 1, windowMs: 1500 }] }, new MemoryCounterStore()),
    ).toThrow(/whole number of seconds/);
  });

  describe("the defaults stop the abuse of issue 6 (ten seconds, one client)", () => {
    async function run(rateClass: "read" | "send", requests: number): Promise<number> {
      const clock = manualClock();
      const limiter = new RateLimiter({ budgets: DEFAULT_BUDGETS }, new MemoryCounterStore(), { now: clock.now });
      let admitted = 0;
      for (let i = 0; i < requests; i += 1) {
        clock.set(1_700_000_000_000 + Math.floor((i * 10_000) / requests));
        if ((await limiter.consume(rateClass, { api_key: "key_1", tenant: "acc_1:live" })).allowed) admitted += 1;
      }
      return admitted;
    }

    it("2,000 reads: about half refused (500 at once, then 50/s)", async () => {
      const admitted = await run("read", 2000);
      expect(admitted).toBeGreaterThanOrEqual(990);
      expect(admitted).toBeLessThanOrEqual(1001);
    });

    it("900 sends: about 200 pass (100 at once, then 10/s)", async () => {
      const admitted = await run("send", 900);
      expect(admitted).toBeGreaterThanOrEqual(195);
      expect(admitted).toBeLessThanOrEqual(201);
    });

    it("2,000 bad keys from one address: about 23 are even tried", async () => {
      const clock = manualClock();
      const limiter = new RateLimiter({ budgets: DEFAULT_BUDGETS }, new MemoryCounterStore(), { now: clock.now });
      let tried = 0;
      for (let i = 0; i < 2000; i += 1) {
        clock.set(1_700_000_000_000 + i * 5);
        const keys = { client_address: "198.51.100.7" };
        if (!(await limiter.peek("auth_failure", keys)).allowed) continue;
        tried += 1;
        await limiter.charge("auth_failure", keys);
      }
      expect(tried).toBeGreaterThanOrEqual(20);
      expect(tried).toBeLessThanOrEqual(24);
    });
  });
});
