// Bounded concurrency: a batch handler that sends or renders many items at
// once keeps at most `limit` of them in flight, so that one batch neither
// serialises (one at a time) nor floods a provider or a pool.

/**
 * Runs `task` on every item, at most `limit` at a time, and waits for all of
 * them; never rejects. The results are in the items' order.
 */
export async function settleLimited<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<Array<PromiseSettledResult<R>>> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  const results = new Array<PromiseSettledResult<R>>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = { status: "fulfilled", value: await task(items[index]!, index) };
      } catch (reason) {
        results[index] = { status: "rejected", reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
