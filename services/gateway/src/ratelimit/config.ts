import { ConfigError, envInt, type Env } from "@emailsvc/runtime";
import type { Rate } from "./gcra.js";
import { DEFAULT_MAX_KEYS } from "./memory-store.js";
import { DEFAULT_BUDGETS, describeRate, type Budget, type KeyKind, type RateClass, type RateLimitPolicy } from "./policy.js";

// Rate-limit settings, read once at start like every other setting: a bad
// value stops the process with a message naming the variable. The table of
// variables and defaults is in the gateway's README ("Rate limits").

export type CounterStoreKind = "memory" | "shared";

export interface RateLimitConfig {
  /** RATE_LIMITS: `on` (default) or `off` (nothing is limited, no RateLimit headers; for load tests). */
  enabled: boolean;
  /** The budgets in force (empty when off); RATE_LIMIT_<CLASS>_PER_<KIND>. */
  policy: RateLimitPolicy;
  /** RATE_LIMIT_STORE: `memory` (default, per replica) or `shared` (the gateway's MongoDB; needs MONGO_URL). */
  store: CounterStoreKind;
  /** RATE_LIMIT_STORE_TIMEOUT_MS: longest wait for the shared store before this replica decides alone; default 100. */
  storeTimeoutMs: number;
  /** RATE_LIMIT_TRUSTED_PROXY_HOPS: proxies in front of the gateway that append to X-Forwarded-For; default 0 (ignore it). */
  trustedProxyHops: number;
  /** RATE_LIMIT_MAX_KEYS: most keys the counters of one replica remember; default 250,000 (about 60 MB). */
  maxKeys: number;
}

/** The variable of each budget. */
export const BUDGET_VARIABLES: ReadonlyArray<{ name: string; rateClass: RateClass; kind: KeyKind }> = [
  { name: "RATE_LIMIT_READ_PER_KEY", rateClass: "read", kind: "api_key" },
  { name: "RATE_LIMIT_READ_PER_TENANT", rateClass: "read", kind: "tenant" },
  { name: "RATE_LIMIT_WRITE_PER_KEY", rateClass: "write", kind: "api_key" },
  { name: "RATE_LIMIT_WRITE_PER_TENANT", rateClass: "write", kind: "tenant" },
  { name: "RATE_LIMIT_SEND_PER_KEY", rateClass: "send", kind: "api_key" },
  { name: "RATE_LIMIT_SEND_PER_TENANT", rateClass: "send", kind: "tenant" },
  { name: "RATE_LIMIT_AUTH_FAILURE_PER_ADDRESS", rateClass: "auth_failure", kind: "client_address" },
];

const OTHER_VARIABLES = [
  "RATE_LIMITS",
  "RATE_LIMIT_STORE",
  "RATE_LIMIT_STORE_TIMEOUT_MS",
  "RATE_LIMIT_TRUSTED_PROXY_HOPS",
  "RATE_LIMIT_MAX_KEYS",
];

export const DEFAULT_STORE_TIMEOUT_MS = 100;

const MAX_LIMIT = 1_000_000_000;
const MAX_PER_SECOND = 10_000;
const MAX_WINDOW_SECONDS = 24 * 60 * 60;
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/**
 * `"<count>/<window>"`, e.g. `100/10s`, `300/1m`, `10/s`, `5000/1h`: `count`
 * units per window, refilled continuously (GCRA). The window is whole seconds
 * (s), minutes (m) or hours (h), 1 s to 24 h. `off` drops the budget.
 * Returns undefined for `off`.
 */
export function parseRate(variable: string, raw: string): Rate | undefined {
  const value = raw.trim();
  if (value.toLowerCase() === "off") return undefined;
  const match = /^([0-9]+)\s*\/\s*([0-9]*)\s*([smh])$/i.exec(value);
  const fail = (why: string): never => {
    throw new ConfigError(
      `environment variable ${variable} must be "<count>/<window>" such as "100/10s" (window in s, m or h) or "off"${why}, got "${raw}"`,
    );
  };
  if (!match) return fail("");
  const limit = Number(match[1]);
  const windowSeconds = (match[2] === "" ? 1 : Number(match[2])) * UNIT_SECONDS[match[3]!.toLowerCase()]!;
  if (limit < 1 || limit > MAX_LIMIT) return fail(`; count must be 1..${MAX_LIMIT}`);
  if (windowSeconds < 1 || windowSeconds > MAX_WINDOW_SECONDS) return fail("; window must be 1s..24h");
  // Refill steps are whole microseconds (gcra.ts): at most 10,000 a second
  // keeps their rounding under 1 %.
  if (limit > windowSeconds * MAX_PER_SECOND) return fail(`; at most ${MAX_PER_SECOND} per second`);
  return { limit, windowMs: windowSeconds * 1000 };
}

/** The settings from the environment (the process's, or a given one). */
export function loadRateLimitConfig(env: Env = process.env): RateLimitConfig {
  // A misspelt variable would otherwise leave a default silently in force.
  const known = new Set([...BUDGET_VARIABLES.map((v) => v.name), ...OTHER_VARIABLES]);
  for (const name of Object.keys(env)) {
    if (/^RATE_LIMIT/.test(name) && !known.has(name) && env[name] !== undefined) {
      throw new ConfigError(`unknown environment variable ${name}; the rate-limit settings are ${[...known].join(", ")}`);
    }
  }

  const switchValue = (env.RATE_LIMITS ?? "").trim().toLowerCase();
  if (!["", "on", "off"].includes(switchValue)) {
    throw new ConfigError(`environment variable RATE_LIMITS must be "on" or "off", got "${env.RATE_LIMITS}"`);
  }
  const enabled = switchValue !== "off";

  // Every budget is parsed even when limits are off, so a wrong value is
  // found before someone turns them on.
  const budgets: Budget[] = [];
  for (const { name, rateClass, kind } of BUDGET_VARIABLES) {
    const raw = env[name];
    const fallback = DEFAULT_BUDGETS.find((b) => b.rateClass === rateClass && b.kind === kind);
    const rate = raw === undefined || raw === "" ? fallback : parseRate(name, raw);
    if (rate) budgets.push({ rateClass, kind, limit: rate.limit, windowMs: rate.windowMs });
  }

  const storeValue = (env.RATE_LIMIT_STORE ?? "memory").trim().toLowerCase() || "memory";
  if (storeValue !== "memory" && storeValue !== "shared") {
    throw new ConfigError(`environment variable RATE_LIMIT_STORE must be "memory" or "shared", got "${env.RATE_LIMIT_STORE}"`);
  }
  if (storeValue === "shared" && (env.MONGO_URL === undefined || env.MONGO_URL === "")) {
    throw new ConfigError(
      "RATE_LIMIT_STORE=shared keeps the counters in the gateway's MongoDB, so it needs MONGO_URL " +
        "(the embedded store serves one process; leave RATE_LIMIT_STORE unset for counters in memory)",
    );
  }

  return {
    enabled,
    policy: { budgets: enabled ? budgets : [] },
    store: storeValue,
    storeTimeoutMs: envInt("RATE_LIMIT_STORE_TIMEOUT_MS", DEFAULT_STORE_TIMEOUT_MS, { min: 1, max: 10_000 }, env),
    trustedProxyHops: envInt("RATE_LIMIT_TRUSTED_PROXY_HOPS", 0, { min: 0, max: 10 }, env),
    maxKeys: envInt("RATE_LIMIT_MAX_KEYS", DEFAULT_MAX_KEYS, { min: 1000, max: 100_000_000 }, env),
  };
}

/** One line for the start-up log: what is in force (no keys, no addresses). */
export function describeRateLimitConfig(config: RateLimitConfig): string {
  if (!config.enabled) return "rate limits off (RATE_LIMITS=off)";
  const budgets = config.policy.budgets.map((b) => `${b.rateClass}/${b.kind} ${describeRate(b)}`).join(", ");
  return `rate limits: ${budgets}; counters ${config.store === "shared" ? "shared in MongoDB" : "in memory per replica"}`;
}
