import type { ConsumeOptions, GcraResult, Rate } from "./gcra.js";

/**
 * Where the counters live: one GCRA time (TAT) per counter id. The algorithm
 * is gcra.ts; a store applies it to its stored value atomically, so that two
 * requests racing on one id never both take the last unit (see each store for
 * what it guarantees). `nowUs` is the caller's clock in whole microseconds
 * (gcra.ts `toMicros`), like the TATs.
 */
export interface CounterStore {
  /** Takes `options.cost` units (default 1) if the budget allows it (or always, with `force`). */
  consume(id: string, rate: Rate, nowUs: number, options?: ConsumeOptions): Promise<GcraResult>;
  /**
   * The budget without taking anything. Exact in memory; the shared store
   * answers from what this replica last saw of the counter (no round trip).
   */
  peek(id: string, rate: Rate, nowUs: number): Promise<GcraResult>;
  /** Gives back units a consume took (the request was refused by another budget). */
  refund(id: string, rate: Rate, nowUs: number, cost?: number): Promise<void>;
  /** Stops background work (the shared store's sweep). The counters' backing store stays open. */
  close(): Promise<void>;
}
