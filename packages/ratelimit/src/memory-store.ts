import { decide, emissionMs, isIdle, stateAt, type Bucket, type BucketState, type Decision } from "./gcra.js";
import type { CounterStore, Outcome } from "./store.js";

export interface MemoryCounterStoreOptions {
  /**
   * Most buckets remembered (RATE_LIMIT_MAX_KEYS, default 100 000, ≈ 150–230 bytes
   * each). Beyond it the least recently charged bucket is forgotten even if it
   * is not full yet: that key starts afresh, which is the price of bounded
   * memory when more distinct clients are being limited at once than this.
   */
  maxKeys?: number;
}

export const DEFAULT_MAX_KEYS = 100_000;

/**
 * The counters in this process's memory: one number (the GCRA TAT) per
 * bucket in a Map (≈ 150–230 bytes of heap each, measured by bench/ratelimit).
 * The Map's insertion order is kept as "least recently charged first" (a
 * charge deletes and re-inserts), so eviction looks only at the front: each
 * charge forgets up to two buckets there that are full again (forgetting a
 * full bucket loses nothing, see gcra.ts) and, over `maxKeys`, the oldest
 * one. That is O(1) per request (amortized) and no timer: memory follows the
 * buckets being limited now, and never exceeds `maxKeys`, however many keys
 * or addresses guess.
 *
 * Decisions are synchronous, so concurrent requests of one process are exact:
 * never more admitted than the budget.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly tats = new Map<string, number>();
  /**
   * A long-lived iterator over `tats`, kept at the least recently charged
   * entry. Iterating from the start each time would step over every entry
   * deleted since the Map last compacted (V8 leaves holes until it rehashes),
   * which made each eviction cost tens of µs under a flood; the cursor passes
   * each hole once. Map iterators stay valid across deletes, inserts and
   * rehashing, and see entries appended behind them.
   */
  private cursor: Iterator<[string, number]> | undefined;
  /** The entry the cursor stopped at, not yet evicted. */
  private pending: [string, number] | undefined;
  readonly maxKeys: number;
  /** Buckets forgotten before they were full (over maxKeys). */
  evictedLive = 0;

  constructor(options: MemoryCounterStoreOptions = {}) {
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
    if (!Number.isInteger(this.maxKeys) || this.maxKeys < 1) throw new RangeError("maxKeys must be a positive integer");
  }

  /** Buckets remembered now. */
  get size(): number {
    return this.tats.size;
  }

  async consume(buckets: readonly Bucket[], now: number): Promise<Outcome> {
    return this.consumeNow(buckets, now);
  }

  /** consume(), synchronously. */
  consumeNow(buckets: readonly Bucket[], now: number): Outcome {
    const decisions = buckets.map((bucket) => decide(bucket.policy, this.tats.get(bucket.key), now, bucket.cost));
    const outcome = outcomeOf(decisions);
    if (outcome.allowed) buckets.forEach((bucket, i) => this.record(bucket.key, decisions[i]!.tat, now));
    return outcome;
  }

  /** What consume() would answer, without charging anything. */
  evaluate(buckets: readonly Bucket[], now: number): Outcome {
    return outcomeOf(buckets.map((bucket) => decide(bucket.policy, this.tats.get(bucket.key), now, bucket.cost)));
  }

  peek(bucket: Bucket, now: number): BucketState {
    return stateAt(bucket.policy, this.tats.get(bucket.key), now);
  }

  async refund(bucket: Bucket, now: number): Promise<void> {
    this.refundNow(bucket, now);
  }

  /** refund(), synchronously: the bucket's TAT moves back by what the charge added (a bucket already full stays full). */
  refundNow(bucket: Bucket, now: number): void {
    const tat = this.tats.get(bucket.key);
    if (tat === undefined) return;
    this.record(bucket.key, tat - emissionMs(bucket.policy) * (bucket.cost ?? 1), now);
  }

  /** The TAT known for a key; undefined when unknown or forgotten (full). */
  tatOf(key: string): number | undefined {
    return this.tats.get(key);
  }

  /** Sets a bucket's TAT (as decided here, or as read from a shared store). */
  record(key: string, tat: number, now: number): void {
    this.tats.delete(key);
    if (this.pending?.[0] === key) this.pending = undefined;
    if (!isIdle(tat, now)) this.tats.set(key, tat);
    this.evict(now);
  }

  /** Forgets every bucket that is full again (tests and benchmarks; charges already do it incrementally). */
  sweep(now: number): void {
    for (const [key, tat] of this.tats) if (isIdle(tat, now)) this.tats.delete(key);
  }

  async close(): Promise<void> {}

  private evict(now: number): void {
    let idleForgotten = 0;
    for (;;) {
      const entry = this.front();
      if (!entry) return;
      const [key, tat] = entry;
      const over = this.tats.size > this.maxKeys;
      if (!over && (idleForgotten >= 2 || !isIdle(tat, now))) return;
      this.tats.delete(key);
      this.pending = undefined;
      if (isIdle(tat, now)) idleForgotten += 1;
      else this.evictedLive += 1;
    }
  }

  /** The least recently charged entry, without removing it. */
  private front(): [string, number] | undefined {
    let restarted = false;
    for (;;) {
      if (this.pending) {
        // Still where the cursor found it? (A charge since moved it to the back.)
        if (this.tats.get(this.pending[0]) === this.pending[1]) return this.pending;
        this.pending = undefined;
      }
      this.cursor ??= this.tats.entries();
      const next = this.cursor.next();
      if (!next.done) {
        this.pending = next.value;
        continue;
      }
      // A finished iterator sees nothing added later: start again, once.
      this.cursor = undefined;
      if (restarted || this.tats.size === 0) return undefined;
      restarted = true;
    }
  }
}

/** All-or-nothing verdict of per-bucket decisions. */
export function outcomeOf(decisions: readonly Decision[]): Outcome {
  const refusedBy = decisions.flatMap((decision, i) => (decision.allowed ? [] : [i]));
  return {
    allowed: refusedBy.length === 0,
    // Refused: nothing was charged, so every bucket stands as it was.
    states: decisions.map((d) => (refusedBy.length === 0 ? { limit: d.limit, remaining: d.remaining, resetMs: d.resetMs } : d.before)),
    retryAfterMs: refusedBy.length === 0 ? 0 : Math.max(...refusedBy.map((i) => decisions[i]!.retryAfterMs)),
    refusedBy,
  };
}
