import { ConfigError, envInt, envOptional, type Env } from "@emailsvc/runtime";
import { parseCidr } from "./domain/address-policy.js";
import { DEFAULT_RETRY } from "./domain/retry.js";

/** The webhooks service's own settings (the common ones are the skeleton's). */
export interface WebhooksConfig {
  /**
   * SEALING_KEYS as set (`kid:base64secret[,…]`, as TOKEN_SIGNING_KEYS): the
   * keys endpoints' secrets are sealed under. Required on MongoDB; on the
   * embedded store a development key is kept under DATA_DIR.
   */
  sealingKeys: string | undefined;
  /** WEBHOOK_ALLOW_HTTP=true: plain http endpoint URLs (development, tests); default https only. */
  allowHttp: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_RANGES: CIDRs webhooks may reach although private or loopback (e.g. `127.0.0.0/8`); default none. */
  allowPrivateRanges: string[];
  /** WEBHOOK_TIMEOUT_MS: how long an attempt waits for the endpoint's answer (default 10 s). */
  timeoutMs: number;
  /** WEBHOOK_RETRY_DELAYS_SECONDS: delays before the 2nd, 3rd, … attempt, the last repeating (default 5,300,1800,7200,18000,36000,36000). */
  retryDelaysMs: number[];
  /** WEBHOOK_RETRY_FOR_SECONDS: how long a message is retried before it fails (default 3 days). */
  retryForMs: number;
  /** WEBHOOK_DISABLE_AFTER_SECONDS: an endpoint whose every attempt failed this long is turned off (default 5 days). */
  disableAfterMs: number;
  /** WEBHOOK_LOG_RETENTION_DAYS: how long a finished delivery stays in its endpoint's log (default 30). */
  logRetentionDays: number;
  /** WEBHOOK_SENDER_INTERVAL_MS: how often the sender looks for due retries (default 1000). */
  senderIntervalMs: number;
}

export function loadConfig(env: Env = process.env): WebhooksConfig {
  const flag = envOptional("WEBHOOK_ALLOW_HTTP", env) ?? "false";
  if (flag !== "true" && flag !== "false") throw new ConfigError(`environment variable WEBHOOK_ALLOW_HTTP must be true or false, got "${flag}"`);
  const ranges = (envOptional("WEBHOOK_ALLOW_PRIVATE_RANGES", env) ?? "").split(",").map((r) => r.trim()).filter((r) => r !== "");
  for (const range of ranges) {
    if (!parseCidr(range)) throw new ConfigError(`environment variable WEBHOOK_ALLOW_PRIVATE_RANGES: "${range}" is not a CIDR range (e.g. 127.0.0.0/8)`);
  }
  const delays = envOptional("WEBHOOK_RETRY_DELAYS_SECONDS", env);
  let retryDelaysMs = [...DEFAULT_RETRY.delaysMs];
  if (delays !== undefined) {
    const parts = delays.split(",").map((p) => Number(p.trim()));
    if (parts.length === 0 || parts.length > 50 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 7 * 86400)) {
      throw new ConfigError(`environment variable WEBHOOK_RETRY_DELAYS_SECONDS must be 1-50 comma-separated whole seconds (0-604800), got "${delays}"`);
    }
    retryDelaysMs = parts.map((p) => p * 1000);
  }
  return {
    sealingKeys: envOptional("SEALING_KEYS", env),
    allowHttp: flag === "true",
    allowPrivateRanges: ranges,
    timeoutMs: envInt("WEBHOOK_TIMEOUT_MS", 10_000, { min: 100, max: 60_000 }, env),
    retryDelaysMs,
    retryForMs: envInt("WEBHOOK_RETRY_FOR_SECONDS", DEFAULT_RETRY.retryForMs / 1000, { min: 1, max: 30 * 86400 }, env) * 1000,
    disableAfterMs: envInt("WEBHOOK_DISABLE_AFTER_SECONDS", 5 * 86400, { min: 1, max: 365 * 86400 }, env) * 1000,
    logRetentionDays: envInt("WEBHOOK_LOG_RETENTION_DAYS", 30, { min: 1, max: 3650 }, env),
    senderIntervalMs: envInt("WEBHOOK_SENDER_INTERVAL_MS", 1000, { min: 10, max: 600_000 }, env),
  };
}
