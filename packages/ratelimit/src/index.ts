// @emailsvc/ratelimit: budgets by GCRA (one theoretical arrival time per
// bucket), in memory or in a document store (shared by replicas, kept across
// restarts), and the answer a request gets from them (RateLimit headers,
// Retry-After, a detail naming the budget). The gateway limits API keys,
// failed authentications and one-click links with it; the portal a
// subscriber's own requests; campaigns paces sends.
export * from "./gcra.js";
export * from "./policy.js";
export type { CounterStore, Outcome } from "./store.js";
export { DEFAULT_MAX_KEYS, MemoryCounterStore, outcomeOf } from "./memory-store.js";
export { DocumentCounterStore, type DocumentCounterStats, type DocumentCounterStoreOptions } from "./document-store.js";
export * from "./client-address.js";
export * from "./quota.js";
export * from "./budgets.js";
export * from "./settings.js";
