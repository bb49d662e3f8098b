import {
  ConfigError,
  envInt,
  envOptional,
  envString,
  DEFAULT_GATEWAY_PORT,
  GATEWAY_METRICS_PORT,
  SERVICE_NAMES,
  serviceUrlVariable,
  type Env,
  type ServiceName,
} from "@emailsvc/runtime";
import { KeyConfigError, loadKeyRing, loadPreferenceLinkSettings, type KeyRing, type PreferenceLinkSettings } from "@emailsvc/tokens";
import { loadRateLimitConfig, type RateLimitConfig } from "./ratelimit/config.js";
import { auditRetentionDaysFromEnv } from "./members/sweep.js";

// Read once at start; a bad value stops the process naming the variable.
export interface GatewayConfig {
  /** GATEWAY_PORT, default 8080. */
  port: number;
  /** GATEWAY_HOST, default 0.0.0.0 (all interfaces, as in a container). */
  host: string;
  /** `<NAME>_URL` of each service behind the gateway (SUBSCRIBERS_URL required; without another, its routes answer 503). */
  serviceUrls: Partial<Record<ServiceName, string>>;
  /** MONGO_URL: MongoDB of the gateway's data; unset: embedded store. */
  mongoUrl: string | undefined;
  /** MONGO_DB: database (or embedded store folder) name, default `gateway`. */
  mongoDb: string;
  /** DATA_DIR: root of the embedded store, default ./data. */
  dataDir: string;
  /** ADMIN_TOKEN: the operator token of /admin/v1. */
  adminToken: string | undefined;
  /** PUBLIC_API_URL: announced in the OpenAPI document. */
  publicUrl: string | undefined;
  /** GATEWAY_CALL_TIMEOUT_MS: deadline of each service call, default 10 000. */
  callTimeoutMs: number;
  /** API_KEY_CACHE_MS: how long a verified key is reused (and a key revoked elsewhere still works), default 5 000, at most 60 000. */
  apiKeyCacheMs: number;
  /**
   * TOKEN_SIGNING_KEYS: verify the tokens of unsubscribe links (the delivery
   * service signs with the first key). Required on MongoDB; on the embedded
   * store a development key is kept under DATA_DIR.
   */
  tokenKeys: KeyRing;
  /** PREFERENCES_URL, PREFERENCE_TOKEN_TTL_SECONDS: the links POST /subscribers/{id}/preference-token hands out. */
  preferenceLinks: PreferenceLinkSettings;
  /** METRICS_PORT (default 9460) and METRICS_HOST (default GATEWAY_HOST): Prometheus metrics at /metrics. */
  metricsPort: number;
  metricsHost: string;
  /** RATE_LIMIT, RATE_LIMIT_* and TRUSTED_PROXY_HOPS (see ratelimit/config.ts and the README). */
  rateLimit: RateLimitConfig;
  /** AUDIT_LOG_RETENTION_DAYS: how long the account's audit log keeps an entry, default 400. */
  auditRetentionDays: number;
}

/**
 * The shortest ADMIN_TOKEN the gateway starts with (the chart asks the same).
 * API keys (238 bits) and signed tokens cannot be guessed; the admin token is
 * the one secret an operator picks. A valid credential is served even from an
 * address whose failed attempts are being refused (so that one attacker
 * behind a shared proxy cannot lock everyone out), which leaves its length as
 * what keeps it from being guessed.
 */
export const ADMIN_TOKEN_MIN_LENGTH = 24;
/** And the fewest different characters in it (a random hex token of 24 has about 15). */
export const ADMIN_TOKEN_MIN_DISTINCT = 8;

/** ADMIN_TOKEN, refused when shorter than ADMIN_TOKEN_MIN_LENGTH; undefined when unset. */
export function adminTokenFromEnv(env: Env = process.env): string | undefined {
  const token = envOptional("ADMIN_TOKEN", env);
  if (token !== undefined && token.length < ADMIN_TOKEN_MIN_LENGTH) {
    throw new ConfigError(
      `environment variable ADMIN_TOKEN must be at least ${ADMIN_TOKEN_MIN_LENGTH} characters (e.g. openssl rand -hex 32): the failure budget refuses guesses only once they fail, so a short token could be guessed`,
    );
  }
  // Length alone lets "aaaa…" through; a random token of this length has far more.
  if (token !== undefined && new Set(token).size < ADMIN_TOKEN_MIN_DISTINCT) {
    throw new ConfigError(
      `environment variable ADMIN_TOKEN must use at least ${ADMIN_TOKEN_MIN_DISTINCT} different characters (e.g. openssl rand -hex 32): a token of a few repeated characters is guessed first`,
    );
  }
  return token;
}

export function loadConfig(): GatewayConfig {
  return {
    port: envInt("GATEWAY_PORT", DEFAULT_GATEWAY_PORT, { min: 0, max: 65535 }),
    host: envString("GATEWAY_HOST", "0.0.0.0"),
    serviceUrls: serviceUrlsFromEnv(),
    mongoUrl: envOptional("MONGO_URL"),
    mongoDb: envString("MONGO_DB", "gateway"),
    dataDir: envString("DATA_DIR", "./data"),
    adminToken: adminTokenFromEnv(),
    publicUrl: envOptional("PUBLIC_API_URL"),
    callTimeoutMs: envInt("GATEWAY_CALL_TIMEOUT_MS", 10_000, { min: 100, max: 120_000 }),
    apiKeyCacheMs: envInt("API_KEY_CACHE_MS", 5000, { min: 0, max: 60_000 }),
    tokenKeys: tokenKeysFromEnv(),
    preferenceLinks: loadPreferenceLinkSettings(),
    metricsPort: envInt("METRICS_PORT", GATEWAY_METRICS_PORT, { min: 0, max: 65535 }),
    metricsHost: envString("METRICS_HOST", envString("GATEWAY_HOST", "0.0.0.0")),
    rateLimit: loadRateLimitConfig(process.env),
    auditRetentionDays: auditRetentionDaysFromEnv(),
  };
}

function serviceUrlsFromEnv(): Partial<Record<ServiceName, string>> {
  const urls: Partial<Record<ServiceName, string>> = {};
  for (const name of SERVICE_NAMES) {
    const url = name === "subscribers" ? envString(serviceUrlVariable(name)) : envOptional(serviceUrlVariable(name));
    if (url !== undefined) urls[name] = url;
  }
  return urls;
}

function tokenKeysFromEnv(): KeyRing {
  try {
    return loadKeyRing({
      value: envOptional("TOKEN_SIGNING_KEYS"),
      developmentDir: envOptional("MONGO_URL") ? undefined : envString("DATA_DIR", "./data"),
    });
  } catch (err) {
    if (err instanceof KeyConfigError) throw new ConfigError(err.message);
    throw err;
  }
}
