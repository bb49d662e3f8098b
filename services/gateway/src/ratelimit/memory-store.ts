import { gcraConsume, gcraPeek, gcraRefund, type ConsumeOptions, type GcraResult, type Rate } from "./gcra.js";
import type { CounterStore } from "./store.js";

/** Counters one replica keeps at most, unless told otherwise (RATE_LIMIT_MAX_KEYS). */
export const DEFAULT_MAX_KEYS = 250_000;

export interface MemoryCounterStoreOptions {
  /**
   * Most counters kept. Past it the least recently written counter is
   * forgotten (that key gets a full budget back): memory stays bounded
   * whatever an attacker sends. Default 250,000: about 60 MB at the 237
   * bytes a counter takes (bench/README.md, "Rate limiter").
   */
  maxKeys?: number;
}

/**
 * Counters in this process: one Map entry (id → TAT, µs) per key with a budget
 * in use. Exact: JavaScript runs one consume at a time, so concurrent requests
 * never over-admit.
 *
 * Idle keys are dropped as we go, not by a timer: the Map is kept in order of
 * last write (delete + set moves an entry to the end), and every write looks
 * at the oldest entries and deletes those whose TAT has passed (a passed TAT
 * means a full budget, the same as no entry). An entry is written with a TAT at
 * most two windows ahead, so an entry at the front is gone within two of the
 * longest windows of its last write, and what the Map holds is the keys
 * written in about that span: O(keys active recently), never O(keys ever seen).
 * Millions of bad-key guesses from changing addresses cost one entry each for
 * at most two minutes (the default 60 s auth-failure window), and `maxKeys`
 * caps even that.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly tats = new Map<string, number>();
  private readonly maxKeys: number;
  /** Counters forgotten because of `maxKeys` (for tests and the benchmark). */
  evictions = 0;

  constructor(options: MemoryCounterStoreOptions = {}) {
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  }

  /** Counters held now (idle ones not yet dropped included). */
  get size(): number {
    return this.tats.size;
  }

  async consume(id: string, rate: Rate, nowUs: number, options?: ConsumeOptions): Promise<GcraResult> {
    return this.consumeSync(id, rate, nowUs, options);
  }

  /** The synchronous core, also used by the shared store's local mirror. */
  consumeSync(id: string, rate: Rate, nowUs: number, options?: ConsumeOptions): GcraResult {
    const result = gcraConsume(this.tats.get(id), nowUs, rate, options);
    if (result.allowed) this.write(id, result.tat, nowUs);
    return result;
  }

  async peek(id: string, rate: Rate, nowUs: number): Promise<GcraResult> {
    return gcraPeek(this.tats.get(id), nowUs, rate);
  }

  async refund(id: string, rate: Rate, nowUs: number, cost = 1): Promise<void> {
    const tat = gcraRefund(this.tats.get(id), rate, cost);
    if (tat === undefined) return;
    if (tat <= nowUs) this.tats.delete(id);
    else this.tats.set(id, tat);
  }

  async close(): Promise<void> {
    // Nothing runs in the background.
  }

  /** The stored TAT of a counter, if any. */
  get(id: string): number | undefined {
    return this.tats.get(id);
  }

  /** Records a TAT learnt elsewhere (the shared store's answer), never moving it back. */
  remember(id: string, tat: number, nowUs: number): void {
    const known = this.tats.get(id);
    if (known !== undefined && known >= tat) return;
    this.write(id, tat, nowUs);
  }

  /** Forgets a counter (the shared store found it absent). */
  forget(id: string): void {
    this.tats.delete(id);
  }

  /** Drops every counter whose TAT has passed; returns how many. Writes already do this bit by bit. */
  sweep(nowUs: number): number {
    let dropped = 0;
    for (const [id, tat] of this.tats) {
      if (tat <= nowUs) {
        this.tats.delete(id);
        dropped += 1;
      }
    }
    return dropped;
  }

  private write(id: string, tat: number, nowUs: number): void {
    this.tats.delete(id);
    this.tats.set(id, tat);
    // Two looks per write: each write adds at most one entry, so the idle ones
    // leave at least as fast as new ones come.
    for (let i = 0; i < 2; i += 1) {
      const oldest = this.tats.entries().next();
      if (oldest.done || oldest.value[1] > nowUs) break;
      this.tats.delete(oldest.value[0]);
    }
    while (this.tats.size > this.maxKeys) {
      const oldest = this.tats.keys().next();
      if (oldest.done) break;
      this.tats.delete(oldest.value);
      this.evictions += 1;
    }
  }
}
