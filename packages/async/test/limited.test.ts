import { settleLimited } from "../src/limited.js";

describe("settleLimited", () => {
  it("runs every task with at most `limit` in flight, results in order, failures settled", async () => {
    let inFlight = 0;
    let most = 0;
    const results = await settleLimited([5, 1, 4, 2, 3, 0, 6], 3, async (n, index) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, n));
      inFlight -= 1;
      if (n === 4) throw new Error(`item ${index} failed`);
      return n * 10;
    });
    expect(most).toBe(3);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([50, 10, "item 2 failed", 20, 30, 0, 60]);
  });

  it("takes an empty list and refuses a limit below one", async () => {
    await expect(settleLimited([], 4, async () => 1)).resolves.toEqual([]);
    await expect(settleLimited([1], 0, async () => 1)).rejects.toThrow(/limit must be a positive integer/);
  });
});
