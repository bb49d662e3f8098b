// @emailsvc/ratelimit: budgets by GCRA (one theoretical arrival time per
// bucket), in memory or in a document store (shared by replicas, kept across
// restarts). The gateway limits requests with it; campaigns will pace sends.
export * from "./gcra.js";
export * from "./policy.js";
export type { CounterStore, Outcome } from "./store.js";
export { DEFAULT_MAX_KEYS, MemoryCounterStore, outcomeOf } from "./memory-store.js";
export { DocumentCounterStore, type DocumentCounterStats, type DocumentCounterStoreOptions } from "./document-store.js";
export * from "./client-address.js";
export * from "./quota.js";
