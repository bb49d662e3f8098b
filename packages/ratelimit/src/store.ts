import type { Bucket, BucketState } from "./gcra.js";

/** The verdict on one request against all of its buckets. */
export interface Outcome {
  /** Every bucket had room; each was charged one request. Otherwise none was. */
  allowed: boolean;
  /** One per bucket, in order: after the charge when allowed, as they stand when refused. */
  states: BucketState[];
  /** When refused: until every refusing bucket admits one request again; 0 when allowed. */
  retryAfterMs: number;
  /** Indexes of the buckets that refused. */
  refusedBy: number[];
}

/**
 * Where the counters live: this process's memory (MemoryCounterStore) or a
 * document store shared by every gateway replica (DocumentCounterStore).
 */
export interface CounterStore {
  /** Charges one request to every bucket when all have room, else to none. */
  consume(buckets: readonly Bucket[], now: number): Promise<Outcome>;
  /**
   * This process's view of a bucket, without I/O and without charging it
   * (checked before each authentication, so it must cost nothing).
   */
  peek(bucket: Bucket, now: number): BucketState;
  /**
   * Gives back a charge `consume` admitted (`bucket.cost` requests), for a
   * request that turned out not to need it: the concurrent duplicate of an
   * idempotent request, which the request that won pays for.
   */
  refund(bucket: Bucket, now: number): Promise<void>;
  /** Stops background work (the shared store's sweep). */
  close(): Promise<void>;
}
