// @emailsvc/gateway: the REST gateway, for the embedded launcher and tests.
export { buildGateway, startGateway, type Gateway, type GatewayDeps, type RunningGateway, type StartGatewayOptions } from "./server.js";
export { bootstrapDevelopment, type DevelopmentCredentials } from "./accounts/bootstrap.js";
export { buildOpenApiDocument, type OpenApiDocument } from "./openapi.js";
export { loadConfig, type GatewayConfig } from "./config.js";
export { loadRateLimitConfig, parsePolicy, RATE_LIMIT_DEFAULTS, type RateClass, type RateLimitConfig } from "./ratelimit/config.js";
export { RateLimiter, type Verdict } from "./ratelimit/limiter.js";
export { MemoryCounterStore } from "./ratelimit/memory-store.js";
export { DocumentCounterStore, type DocumentCounterStoreOptions } from "./ratelimit/document-store.js";
export type { CounterStore, Outcome } from "./ratelimit/store.js";
