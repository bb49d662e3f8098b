// The GCRA arithmetic and the memory store, on a clock moved by hand: no
// sleeping, no timed assertion.

import { decide, emissionMs, stateAt, type Policy } from "../src/gcra";
import { MemoryCounterStore } from "../src/memory-store";

const T0 = 1_700_000_000_000;

/** Charges `n` requests at `now` one after the other; returns how many were admitted. */
function burst(store: MemoryCounterStore, key: string, policy: Policy, now: number, n: number): number {
  let admitted = 0;
  for (let i = 0; i < n; i++) if (store.consumeNow([{ key, policy }], now).allowed) admitted += 1;
  return admitted;
}

describe("GCRA", () => {
  const policy: Policy = { limit: 10, windowMs: 1000 }; // one every 100 ms, 10 at once

  it("admits the limit at once from a fresh bucket, with exact Remaining and Reset", () => {
    let tat: number | undefined;
    for (let i = 0; i < 10; i++) {
      const d = decide(policy, tat, T0);
      expect(d).toMatchObject({ allowed: true, limit: 10, remaining: 9 - i, retryAfterMs: 0 });
      expect(d.resetMs).toBeCloseTo((i + 1) * 100, 6);
      tat = d.tat;
    }
    const refused = decide(policy, tat, T0);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfterMs).toBeCloseTo(100, 6);
    expect(refused.resetMs).toBeCloseTo(1000, 6);
    // A refusal changes nothing.
    expect(refused.tat).toBe(tat);
  });

  it("admits a whole budget at once at today's epoch whatever window/limit is, with exact Remaining (6 per 10 s, 7 per 1 s refused the last one)", () => {
    for (const [limit, windowMs] of [
      [6, 10_000],
      [7, 1000],
      [7, 10_000],
      [3, 1000],
      [9, 7000],
      [20, 60_000],
      [1000, 7000],
    ] as const) {
      for (const now of [T0, Date.now(), 1_795_000_000_123, 4_102_444_800_000 /* 2100 */]) {
        let tat: number | undefined;
        const remaining: number[] = [];
        for (let i = 0; i < limit; i++) {
          const d = decide({ limit, windowMs }, tat, now);
          expect({ limit, windowMs, now, i, allowed: d.allowed }).toEqual({ limit, windowMs, now, i, allowed: true });
          remaining.push(d.remaining);
          tat = d.tat;
        }
        expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => limit - 1 - i));
        const refused = decide({ limit, windowMs }, tat, now);
        expect(refused.allowed).toBe(false);
        // One interval (window/limit, rounded up to 1/1024 ms) until the next.
        expect(refused.retryAfterMs).toBeGreaterThanOrEqual(windowMs / limit);
        expect(refused.retryAfterMs).toBeLessThan(windowMs / limit + 1 / 512);
      }
    }
  });

  it("admits one more per emission interval, never before", () => {
    let tat: number | undefined;
    for (let i = 0; i < 10; i++) tat = decide(policy, tat, T0).tat;
    expect(decide(policy, tat, T0 + 99).allowed).toBe(false);
    expect(decide(policy, tat, T0 + 99).retryAfterMs).toBeCloseTo(1, 6);
    const next = decide(policy, tat, T0 + 100);
    expect(next).toMatchObject({ allowed: true, remaining: 0 });
    expect(decide(policy, next.tat, T0 + 100).allowed).toBe(false);
  });

  it("has no burst at window edges: in any span of t ms at most limit + t·limit/window", () => {
    // A client that sends as fast as it is admitted, for 10 s, on a 1 ms grid.
    const store = new MemoryCounterStore();
    const admittedAt: number[] = [];
    for (let t = 0; t <= 10_000; t += 1) {
      while (store.consumeNow([{ key: "k", policy }], T0 + t).allowed) admittedAt.push(t);
    }
    // 10 at once, then one per 100 ms.
    expect(admittedAt.length).toBe(10 + 100);
    for (const span of [1, 50, 100, 999, 1000, 1001, 2500]) {
      let most = 0;
      for (let i = 0, j = 0; i < admittedAt.length; i++) {
        while (admittedAt[i]! - admittedAt[j]! >= span) j++;
        most = Math.max(most, i - j + 1);
      }
      expect({ span, most: most <= 10 + Math.ceil((span * 10) / 1000) }).toEqual({ span, most: true });
    }
    // Across any 1 s boundary after the first burst: at most 10 + 1, never 2 × 10.
    const inSecond = (from: number) => admittedAt.filter((t) => t >= from && t < from + 1000).length;
    for (let from = 500; from < 9000; from += 250) expect(inSecond(from)).toBeLessThanOrEqual(11);
  });

  it("refills continuously: half a window after a full burst, half the limit is back", () => {
    let tat: number | undefined;
    for (let i = 0; i < 10; i++) tat = decide(policy, tat, T0).tat;
    expect(stateAt(policy, tat, T0 + 500)).toEqual({ limit: 10, remaining: 5, resetMs: 500 });
    expect(stateAt(policy, tat, T0 + 1000)).toEqual({ limit: 10, remaining: 10, resetMs: 0 });
    expect(stateAt(policy, tat, T0 + 5000)).toEqual({ limit: 10, remaining: 10, resetMs: 0 });
  });

  it("keeps counts exact for limits that do not divide the window (7 per 60 s)", () => {
    const odd: Policy = { limit: 7, windowMs: 60_000 };
    const store = new MemoryCounterStore();
    expect(burst(store, "k", odd, T0, 20)).toBe(7);
    // 60 000 / 7 ms, rounded up to 1/1024 ms (gcra.ts): the grid keeps sums exact.
    const emission = emissionMs(odd);
    expect(emission - 60_000 / 7).toBeGreaterThanOrEqual(0);
    expect(emission - 60_000 / 7).toBeLessThan(1 / 1024);
    // Exactly one per emission interval afterwards, over many intervals (no float drift).
    for (let i = 1; i <= 700; i++) {
      const at = T0 + Math.ceil(i * emission);
      expect(burst(store, "k", odd, at, 3)).toBe(1);
    }
  });

  it("a limit of 1 admits one, then one per window", () => {
    const one: Policy = { limit: 1, windowMs: 60_000 };
    const a = decide(one, undefined, T0);
    expect(a).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 });
    expect(decide(one, a.tat, T0 + 59_999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(decide(one, a.tat, T0 + 60_000).allowed).toBe(true);
  });
});

describe("memory store", () => {
  const policy: Policy = { limit: 3, windowMs: 3000 };

  it("keeps keys apart", () => {
    const store = new MemoryCounterStore();
    expect(burst(store, "a", policy, T0, 5)).toBe(3);
    expect(burst(store, "b", policy, T0, 5)).toBe(3);
  });

  it("charges all buckets of a request or none (key and tenant)", () => {
    const store = new MemoryCounterStore();
    const small: Policy = { limit: 2, windowMs: 2000 };
    const key1 = { key: "k1", policy: small };
    const key2 = { key: "k2", policy: small };
    const tenant = { key: "t", policy: { limit: 3, windowMs: 3000 } };
    expect(store.consumeNow([key1, tenant], T0).allowed).toBe(true);
    expect(store.consumeNow([key1, tenant], T0).allowed).toBe(true);
    // key1 is spent: the tenant is not charged for the refusal.
    const refused = store.consumeNow([key1, tenant], T0);
    expect(refused).toMatchObject({ allowed: false, refusedBy: [0] });
    expect(refused.states[1]).toMatchObject({ remaining: 1 });
    expect(store.peek(tenant, T0).remaining).toBe(1);
    // Another key of the tenant takes the tenant's last one, then the tenant refuses.
    expect(store.consumeNow([key2, tenant], T0).allowed).toBe(true);
    expect(store.consumeNow([key2, tenant], T0)).toMatchObject({ allowed: false, refusedBy: [1] });
    expect(store.peek(key2, T0).remaining).toBe(1);
  });

  it("forgets buckets once they are full again, as requests go by (no timer)", () => {
    const store = new MemoryCounterStore();
    for (let i = 0; i < 1000; i++) store.consumeNow([{ key: `guess-${i}`, policy }], T0 + i);
    // Each bucket is full 1 s after its one request: none is yet.
    expect(store.size).toBe(1000);
    // Ten seconds later every one of them is full; each new charge forgets two.
    for (let i = 0; i < 1000; i++) store.consumeNow([{ key: `later-${i}`, policy }], T0 + 10_000 + i);
    expect(store.size).toBe(1000);
    for (let i = 0; i < 1000; i++) expect(store.tatOf(`guess-${i}`)).toBeUndefined();
    store.sweep(T0 + 100_000);
    expect(store.size).toBe(0);
  });

  it("never holds more than maxKeys buckets, whatever the number of keys guessing at once", () => {
    const store = new MemoryCounterStore({ maxKeys: 1000 });
    for (let i = 0; i < 200_000; i++) store.consumeNow([{ key: `addr-${i}`, policy: { limit: 20, windowMs: 60_000 } }], T0);
    expect(store.size).toBe(1000);
    // The most recent are the ones kept.
    expect(store.tatOf("addr-199999")).toBeDefined();
    expect(store.tatOf("addr-0")).toBeUndefined();
    expect(store.evictedLive).toBe(199_000);
  });

  it("forgets the least recently charged first, however the Map's order was reached", () => {
    const store = new MemoryCounterStore({ maxKeys: 3 });
    const long: Policy = { limit: 10, windowMs: 60_000 };
    for (const key of ["a", "b", "c"]) store.consumeNow([{ key, policy: long }], T0);
    store.consumeNow([{ key: "a", policy: long }], T0); // a is now the most recent
    store.consumeNow([{ key: "d", policy: long }], T0);
    expect(["a", "b", "c", "d"].map((k) => store.tatOf(k) !== undefined)).toEqual([true, false, true, true]);
    store.consumeNow([{ key: "c", policy: long }], T0);
    store.consumeNow([{ key: "e", policy: long }], T0);
    store.consumeNow([{ key: "f", policy: long }], T0);
    expect(["a", "c", "d", "e", "f"].map((k) => store.tatOf(k) !== undefined)).toEqual([false, true, false, true, true]);
    // Emptied and filled again: the front is found anew.
    store.sweep(T0 + 10 * 60_000);
    expect(store.size).toBe(0);
    for (const key of ["x", "y", "z", "w"]) store.consumeNow([{ key, policy: long }], T0 + 10 * 60_000);
    expect(["x", "y", "z", "w"].map((k) => store.tatOf(k) !== undefined)).toEqual([false, true, true, true]);
  });

  it("admits exactly the budget to concurrent requests", async () => {
    const store = new MemoryCounterStore();
    const results = await Promise.all(Array.from({ length: 50 }, () => store.consume([{ key: "k", policy }], T0)));
    expect(results.filter((r) => r.allowed)).toHaveLength(3);
  });
});
