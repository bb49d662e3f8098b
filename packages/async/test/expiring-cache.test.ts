import { ExpiringCache } from "../src/expiring-cache";

describe("ExpiringCache", () => {
  it("keeps a value for its own ttl, shares concurrent loads of a key, forgets on demand and stays bounded", async () => {
    let now = 1_000;
    const cache = new ExpiringCache<string | null>((value) => (value === null ? 5 : 30), { now: () => now, maxEntries: 2 });
    let loads = 0;
    const load = (value: string | null) => async () => {
      loads++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return value;
    };
    // Two gets at once: one load.
    expect(await Promise.all([cache.get("a", load("A")), cache.get("a", load("other"))])).toEqual(["A", "A"]);
    expect(loads).toBe(1);
    now += 29;
    expect(await cache.get("a", load("new"))).toBe("A");
    now += 1;
    expect(await cache.get("a", load("new"))).toBe("new");
    expect(loads).toBe(2);
    // A miss is kept for its shorter ttl.
    expect(await cache.get("b", load(null))).toBeNull();
    now += 5;
    expect(await cache.get("b", load("B"))).toBe("B");
    cache.forget("b");
    expect(await cache.get("b", load("B2"))).toBe("B2");
    // Past maxEntries the cache is emptied: "a" is loaded again.
    await cache.get("c", load("C"));
    expect(await cache.get("a", load("A3"))).toBe("A3");
  });

  it("keeps nothing when the load fails, and the next get tries again", async () => {
    const cache = new ExpiringCache<number>(() => 1_000);
    await expect(cache.get("k", () => Promise.reject(new Error("down")))).rejects.toThrow("down");
    expect(await cache.get("k", async () => 7)).toBe(7);
  });
});
