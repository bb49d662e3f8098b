import { ConfigError, envInt, envOptional, type Env } from "@emailsvc/runtime";
import { DEFAULT_MAX_KEYS, parsePolicy, type Policy } from "@emailsvc/ratelimit";

export { formatPolicy, parsePolicy } from "@emailsvc/ratelimit";

/**
 * The budget an operation draws from. Every API-key operation has one: GET
 * is `read`, other methods `write`, and the send endpoint `send`; the OpenAPI
 * document states it per operation (`x-rate-limit-class`).
 */
export type RateClass = "read" | "write" | "send";
export const RATE_CLASSES: readonly RateClass[] = ["read", "write", "send"];

/**
 * The budget a preference-center operation (preference token) draws from:
 * GET is `read`, changes `write`, and the two that fan out to every service
 * or cannot be undone, the export and the erasure, `privacy`; the OpenAPI
 * document states it per operation (`x-rate-limit-class`).
 */
export type PreferenceRateClass = "read" | "write" | "privacy";
export const PREFERENCE_RATE_CLASSES: readonly PreferenceRateClass[] = ["read", "write", "privacy"];

export interface RateLimitConfig {
  /** RATE_LIMIT=off turns every limit off (load tests); default on. */
  enabled: boolean;
  /** RATE_LIMIT_READ, RATE_LIMIT_WRITE, RATE_LIMIT_SEND: per API key; null when "off". */
  perKey: Record<RateClass, Policy | null>;
  /** RATE_LIMIT_TENANT_READ, …_WRITE, …_SEND: per account and mode, all its keys together. */
  perTenant: Record<RateClass, Policy | null>;
  /** RATE_LIMIT_PREFERENCE_READ, …_WRITE, …_PRIVACY: per subscriber (all their preference tokens together). */
  perSubscriber: Record<PreferenceRateClass, Policy | null>;
  /** RATE_LIMIT_TENANT_PREFERENCE_READ, …_WRITE, …_PRIVACY: the preference-center API per account and mode, all its subscribers together. */
  perTenantPreference: Record<PreferenceRateClass, Policy | null>;
  /** RATE_LIMIT_AUTH_FAILURES: failed authentications (API key, admin token or preference token) per client address. */
  authFailures: Policy | null;
  /** RATE_LIMIT_STORE: `memory` (this process) or `mongo` (the gateway's MongoDB database, shared by replicas). */
  store: "memory" | "mongo";
  /** RATE_LIMIT_STORE_TIMEOUT_MS: longest wait for the shared store before a request is counted locally. */
  storeTimeoutMs: number;
  /** RATE_LIMIT_MAX_KEYS: most buckets one process remembers. */
  maxKeys: number;
  /**
   * TRUSTED_PROXY_HOPS: proxies in front of the gateway that append the
   * address they saw to X-Forwarded-For (an ingress controller: 1). 0: the
   * header is ignored and the client is the connection's peer.
   */
  trustedProxyHops: number;
}

// The defaults: generous for an integrator (a hundred reads a second per
// key, bursts up to the same), far below what a script does in a loop. The
// abuse they were measured against, all of which passed before (issue 6):
// 2,000 reads, 2,000 bad-key guesses and 900 sends in ten seconds from one
// key or address. Over 10 s these admit at most 1,100 reads, 220 sends and
// 23 failed authentications (limit + 10 s of refill).
//
// The preference-center API (a subscriber's own page, issue 16 defect 6: 300
// exports in 1.45 s from one token, each fanning out to three services)
// serves one person per token: a page load is a read or two, a click a write.
// Per subscriber a minute's worth of clicking fits at once; the export and
// the erasure, which read every service's part or end everything, are a few
// an hour. Per tenant the budgets bound what many tokens together cost.
export const RATE_LIMIT_DEFAULTS = {
  perKey: { read: "100/1s", write: "50/1s", send: "20/1s" },
  perTenant: { read: "200/1s", write: "100/1s", send: "40/1s" },
  perSubscriber: { read: "60/60s", write: "30/60s", privacy: "5/1h" },
  perTenantPreference: { read: "100/1s", write: "50/1s", privacy: "20/60s" },
  authFailures: "20/60s",
} as const;

// The variables, written out (scripts/helm-check.sh looks for each name in the code).
const PER_KEY_VARIABLES: Record<RateClass, string> = { read: "RATE_LIMIT_READ", write: "RATE_LIMIT_WRITE", send: "RATE_LIMIT_SEND" };
const PER_TENANT_VARIABLES: Record<RateClass, string> = {
  read: "RATE_LIMIT_TENANT_READ",
  write: "RATE_LIMIT_TENANT_WRITE",
  send: "RATE_LIMIT_TENANT_SEND",
};

const PER_SUBSCRIBER_VARIABLES: Record<PreferenceRateClass, string> = {
  read: "RATE_LIMIT_PREFERENCE_READ",
  write: "RATE_LIMIT_PREFERENCE_WRITE",
  privacy: "RATE_LIMIT_PREFERENCE_PRIVACY",
};
const PER_TENANT_PREFERENCE_VARIABLES: Record<PreferenceRateClass, string> = {
  read: "RATE_LIMIT_TENANT_PREFERENCE_READ",
  write: "RATE_LIMIT_TENANT_PREFERENCE_WRITE",
  privacy: "RATE_LIMIT_TENANT_PREFERENCE_PRIVACY",
};

/** The budget of a variable: its value, else the default; errors name the variable and its value. */
function policyFrom(env: Env, name: string, fallback: string): Policy | null {
  const raw = envOptional(name, env);
  try {
    return parsePolicy(raw ?? fallback);
  } catch (error) {
    throw new ConfigError(`environment variable ${name} ${(error as Error).message}, got "${raw}"`);
  }
}

const OTHER_VARIABLES = ["RATE_LIMIT", "RATE_LIMIT_AUTH_FAILURES", "RATE_LIMIT_STORE", "RATE_LIMIT_STORE_TIMEOUT_MS", "RATE_LIMIT_MAX_KEYS"];
const KNOWN_VARIABLES = new Set([
  ...Object.values(PER_KEY_VARIABLES),
  ...Object.values(PER_TENANT_VARIABLES),
  ...Object.values(PER_SUBSCRIBER_VARIABLES),
  ...Object.values(PER_TENANT_PREFERENCE_VARIABLES),
  ...OTHER_VARIABLES,
]);

/** Reads the rate-limit settings; a bad value stops the start, naming the variable. */
export function loadRateLimitConfig(env: Env = process.env): RateLimitConfig {
  // A misspelt budget (RATE_LIMIT_SENDS) would otherwise leave the default in force unnoticed.
  const unknown = Object.keys(env).filter((name) => name.startsWith("RATE_LIMIT") && !KNOWN_VARIABLES.has(name));
  if (unknown.length > 0) {
    throw new ConfigError(`unknown environment variable ${unknown.join(", ")}; the rate-limit settings are ${[...KNOWN_VARIABLES].join(", ")}`);
  }
  const switched = (envOptional("RATE_LIMIT", env) ?? "on").toLowerCase();
  if (switched !== "on" && switched !== "off") {
    throw new ConfigError(`environment variable RATE_LIMIT must be "on" or "off", got "${env.RATE_LIMIT}"`);
  }
  const store = (envOptional("RATE_LIMIT_STORE", env) ?? "memory").toLowerCase();
  if (store !== "memory" && store !== "mongo") {
    throw new ConfigError(`environment variable RATE_LIMIT_STORE must be "memory" or "mongo", got "${env.RATE_LIMIT_STORE}"`);
  }
  if (store === "mongo" && envOptional("MONGO_URL", env) === undefined) {
    throw new ConfigError(
      "environment variable RATE_LIMIT_STORE=mongo keeps the counters in the gateway's MongoDB database, but MONGO_URL is not set",
    );
  }
  const perClass = <C extends string>(names: Record<C, string>, defaults: Record<C, string>) =>
    Object.fromEntries((Object.keys(names) as C[]).map((c) => [c, policyFrom(env, names[c], defaults[c])])) as Record<C, Policy | null>;
  return {
    enabled: switched === "on",
    perKey: perClass(PER_KEY_VARIABLES, RATE_LIMIT_DEFAULTS.perKey),
    perTenant: perClass(PER_TENANT_VARIABLES, RATE_LIMIT_DEFAULTS.perTenant),
    perSubscriber: perClass(PER_SUBSCRIBER_VARIABLES, RATE_LIMIT_DEFAULTS.perSubscriber),
    perTenantPreference: perClass(PER_TENANT_PREFERENCE_VARIABLES, RATE_LIMIT_DEFAULTS.perTenantPreference),
    authFailures: policyFrom(env, "RATE_LIMIT_AUTH_FAILURES", RATE_LIMIT_DEFAULTS.authFailures),
    store,
    storeTimeoutMs: envInt("RATE_LIMIT_STORE_TIMEOUT_MS", 250, { min: 1, max: 10_000 }, env),
    maxKeys: envInt("RATE_LIMIT_MAX_KEYS", DEFAULT_MAX_KEYS, { min: 1000, max: 10_000_000 }, env),
    trustedProxyHops: envInt("TRUSTED_PROXY_HOPS", 0, { min: 0, max: 10 }, env),
  };
}
