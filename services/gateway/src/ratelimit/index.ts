// Rate limits of the gateway (issue 6, defect 2). Design, settings and wiring:
// the gateway's README, "Rate limits".

import type { Logger } from "@emailsvc/runtime";
import type { DocumentStore } from "@emailsvc/storage";
import type { RateLimitConfig } from "./config.js";
import { RateLimiter } from "./limiter.js";
import { MemoryCounterStore } from "./memory-store.js";
import { SharedCounterStore } from "./shared-store.js";

export * from "./gcra.js";
export * from "./policy.js";
export * from "./config.js";
export * from "./store.js";
export * from "./memory-store.js";
export * from "./shared-store.js";
export * from "./limiter.js";
export * from "./client-address.js";
export * from "./middleware.js";

export interface CreateRateLimiterDeps {
  /** The gateway's store: holds the counters when `config.store` is `shared`. */
  store: DocumentStore;
  logger?: Logger;
  now?: () => number;
}

/** The limiter the settings describe: counters in memory, or shared in the gateway's store. */
export function createRateLimiter(config: RateLimitConfig, deps: CreateRateLimiterDeps): RateLimiter {
  // With limits off nothing is counted: no shared store, no sweep timer.
  const counters =
    config.enabled && config.store === "shared"
      ? new SharedCounterStore(deps.store, {
          timeoutMs: config.storeTimeoutMs,
          maxKeys: config.maxKeys,
          logger: deps.logger,
          now: deps.now,
        })
      : new MemoryCounterStore({ maxKeys: config.maxKeys });
  return new RateLimiter(config.policy, counters, { now: deps.now, logger: deps.logger });
}
