// @emailsvc/gateway: the REST gateway, for the embedded launcher and tests.
export { buildGateway, startGateway, type Gateway, type GatewayDeps, type RunningGateway, type StartGatewayOptions } from "./server.js";
export { bootstrapDevelopment, type DevelopmentCredentials } from "./accounts/bootstrap.js";
export { buildOpenApiDocument, type OpenApiDocument } from "./openapi.js";
export { adminTokenFromEnv, ADMIN_TOKEN_MIN_LENGTH, loadConfig, type GatewayConfig } from "./config.js";
export { loadRateLimitConfig, parsePolicy, RATE_LIMIT_DEFAULTS, type RateClass, type RateLimitConfig } from "./ratelimit/config.js";
export { auditRetentionDaysFromEnv, DEFAULT_AUDIT_RETENTION_DAYS, sweepMembersData } from "./members/sweep.js";
export { RateLimiter, type Verdict } from "./ratelimit/limiter.js";
export { DocumentCounterStore, MemoryCounterStore, type CounterStore, type DocumentCounterStoreOptions, type Outcome } from "@emailsvc/ratelimit";
