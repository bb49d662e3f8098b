import { isId, newId } from "../src/index.js";

// newId's randomness comes from a pool refilled every 256 ids: a burst many
// times that long (a campaign's email ids, made in a few milliseconds) must
// still give well-formed ids, each once, in the order they were made.

describe("newId", () => {
  it("gives unique, well-formed ids that sort in the order made, across refills of its random pool", () => {
    const ids = Array.from({ length: 10_000 }, () => newId("eml"));
    expect(ids.every((id) => isId("eml", id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id, i) => i === 0 || ids[i - 1]! < id)).toBe(true);
  });

  it("draws fresh randomness for each millisecond: ids of different milliseconds share no random part", () => {
    const randomParts = new Set<string>();
    let last = Date.now();
    for (let made = 0; made < 20; ) {
      const now = Date.now();
      if (now === last) continue;
      last = now;
      randomParts.add(newId("evt").slice(14));
      made += 1;
    }
    expect(randomParts.size).toBe(20);
  });
});
