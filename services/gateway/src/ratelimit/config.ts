import { ConfigError, envInt, envOptional, switchSetting, type Env } from "@emailsvc/runtime";
import { budgetSetting, DEFAULT_MAX_KEYS, PREFERENCE_BUDGET_PREFIX, type Policy } from "@emailsvc/ratelimit";

export { formatPolicy, parsePolicy, PREFERENCE_RATE_CLASSES, type PreferenceRateClass } from "@emailsvc/ratelimit";

/**
 * The budget an operation draws from. Every API-key operation has one: GET
 * is `read`, other methods `write`, and the send endpoint `send`; the OpenAPI
 * document states it per operation (`x-rate-limit-class`). The
 * preference-center operations (preference token) state theirs too (`read`,
 * `write`, `privacy`): the portal charges those, for its API and its page
 * alike (services/portal, "Budgets").
 */
export type RateClass = "read" | "write" | "send";
export const RATE_CLASSES: readonly RateClass[] = ["read", "write", "send"];

export interface RateLimitConfig {
  /** RATE_LIMIT=off turns every limit off (load tests); default on. */
  enabled: boolean;
  /** RATE_LIMIT_READ, RATE_LIMIT_WRITE, RATE_LIMIT_SEND: per API key; null when "off". */
  perKey: Record<RateClass, Policy | null>;
  /** RATE_LIMIT_TENANT_READ, …_WRITE, …_SEND: per account and mode, all its keys together. */
  perTenant: Record<RateClass, Policy | null>;
  /** RATE_LIMIT_AUTH_FAILURES: failed authentications (API key, admin token or preference token) per client address. */
  authFailures: Policy | null;
  /**
   * RATE_LIMIT_UNSUBSCRIBE_ADDRESS: requests to /unsubscribe (the one-click
   * link's page and its POST) per client address; RATE_LIMIT_UNSUBSCRIBE_LINK:
   * one-click POSTs per subscriber (per email when the link names none).
   */
  unsubscribePerAddress: Policy | null;
  unsubscribePerLink: Policy | null;
  /**
   * RATE_LIMIT_PROVIDER_NOTIFICATIONS: posts to a provider's notification
   * route (SES through SNS) per client address, charged before the body is
   * read or its signature checked.
   */
  providerNotificationsPerAddress: Policy | null;
  /**
   * RATE_LIMIT_SIGN_IN_FAILURES: failed dashboard sign-ins per email address;
   * once spent, that address's sign-in is refused (429) until it recovers,
   * even with the right password.
   */
  signInFailures: Policy | null;
  /** RATE_LIMIT_PASSWORD_RESETS_ADDRESS, _EMAIL: password-reset requests per client address and per email address. */
  passwordResetsPerAddress: Policy | null;
  passwordResetsPerEmail: Policy | null;
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
// key or address. Over 10 s these admit at most 1,100 reads, 700 sends and
// 23 failed authentications (limit + 10 s of refill).
//
// Sends: 20 a second per key and 40 per account and mode, as before issue
// 18, but over a 25 s window, so that one batch of 500 (POST
// /api/v1/emails/batch, each message counting one) fits in a full bucket;
// the price is a larger burst of single sends (500 at once, where it was 20).
//
// /unsubscribe (issue 16 review: 100 one-click POSTs with one link in 3 s,
// each calling three or four services): the link is clicked by a person, or
// posted by their mail provider, once; a few repeats (a retry, a double
// click) fit in the link's budget. Per client address the budget is wide,
// because mail providers post their users' one-click requests from a few
// shared addresses: a campaign's unsubscribes arrive at once from there, and
// refusing one would leave a person subscribed against their will.
export const RATE_LIMIT_DEFAULTS = {
  perKey: { read: "100/1s", write: "50/1s", send: "500/25s" },
  perTenant: { read: "200/1s", write: "100/1s", send: "1000/25s" },
  authFailures: "20/60s",
  unsubscribePerAddress: "300/60s",
  unsubscribePerLink: "5/60s",
  // SNS posts a campaign's bounces and deliveries as fast as SES reports them, from a few addresses:
  // wide enough for that, far below a flood of forged messages that each cost a signature check.
  providerNotificationsPerAddress: "600/60s",
  // Dashboard sign-in: a person mistypes a few times; a guesser gets 10 tries
  // per quarter hour per address (the failed-authentication budget of their
  // client address applies too). Resets mail someone: a few per hour.
  signInFailures: "10/15m",
  passwordResetsPerAddress: "20/1h",
  passwordResetsPerEmail: "5/1h",
} as const;

// The variables, written out (scripts/helm-check.sh looks for each name in the code).
const PER_KEY_VARIABLES: Record<RateClass, string> = { read: "RATE_LIMIT_READ", write: "RATE_LIMIT_WRITE", send: "RATE_LIMIT_SEND" };
const PER_TENANT_VARIABLES: Record<RateClass, string> = {
  read: "RATE_LIMIT_TENANT_READ",
  write: "RATE_LIMIT_TENANT_WRITE",
  send: "RATE_LIMIT_TENANT_SEND",
};

const OTHER_VARIABLES = [
  "RATE_LIMIT",
  "RATE_LIMIT_AUTH_FAILURES",
  "RATE_LIMIT_UNSUBSCRIBE_ADDRESS",
  "RATE_LIMIT_UNSUBSCRIBE_LINK",
  "RATE_LIMIT_PROVIDER_NOTIFICATIONS",
  "RATE_LIMIT_SIGN_IN_FAILURES",
  "RATE_LIMIT_PASSWORD_RESETS_ADDRESS",
  "RATE_LIMIT_PASSWORD_RESETS_EMAIL",
  "RATE_LIMIT_STORE",
  "RATE_LIMIT_STORE_TIMEOUT_MS",
  "RATE_LIMIT_MAX_KEYS",
];
const KNOWN_VARIABLES = new Set([...Object.values(PER_KEY_VARIABLES), ...Object.values(PER_TENANT_VARIABLES), ...OTHER_VARIABLES]);

/** Reads the rate-limit settings; a bad value stops the start, naming the variable. */
export function loadRateLimitConfig(env: Env = process.env): RateLimitConfig {
  // A misspelt budget (RATE_LIMIT_SENDS) would otherwise leave the default in
  // force unnoticed. The preference budgets are the portal's (it checks their names).
  const unknown = Object.keys(env).filter((name) => name.startsWith("RATE_LIMIT") && !KNOWN_VARIABLES.has(name) && !PREFERENCE_BUDGET_PREFIX.test(name));
  if (unknown.length > 0) {
    throw new ConfigError(`unknown environment variable ${unknown.join(", ")}; the rate-limit settings are ${[...KNOWN_VARIABLES].join(", ")}`);
  }
  const enabled = switchSetting(env, "RATE_LIMIT");
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
    Object.fromEntries((Object.keys(names) as C[]).map((c) => [c, budgetSetting(env, names[c], defaults[c])])) as Record<C, Policy | null>;
  return {
    enabled,
    perKey: perClass(PER_KEY_VARIABLES, RATE_LIMIT_DEFAULTS.perKey),
    perTenant: perClass(PER_TENANT_VARIABLES, RATE_LIMIT_DEFAULTS.perTenant),
    authFailures: budgetSetting(env, "RATE_LIMIT_AUTH_FAILURES", RATE_LIMIT_DEFAULTS.authFailures),
    unsubscribePerAddress: budgetSetting(env, "RATE_LIMIT_UNSUBSCRIBE_ADDRESS", RATE_LIMIT_DEFAULTS.unsubscribePerAddress),
    unsubscribePerLink: budgetSetting(env, "RATE_LIMIT_UNSUBSCRIBE_LINK", RATE_LIMIT_DEFAULTS.unsubscribePerLink),
    providerNotificationsPerAddress: budgetSetting(env, "RATE_LIMIT_PROVIDER_NOTIFICATIONS", RATE_LIMIT_DEFAULTS.providerNotificationsPerAddress),
    signInFailures: budgetSetting(env, "RATE_LIMIT_SIGN_IN_FAILURES", RATE_LIMIT_DEFAULTS.signInFailures),
    passwordResetsPerAddress: budgetSetting(env, "RATE_LIMIT_PASSWORD_RESETS_ADDRESS", RATE_LIMIT_DEFAULTS.passwordResetsPerAddress),
    passwordResetsPerEmail: budgetSetting(env, "RATE_LIMIT_PASSWORD_RESETS_EMAIL", RATE_LIMIT_DEFAULTS.passwordResetsPerEmail),
    store,
    storeTimeoutMs: envInt("RATE_LIMIT_STORE_TIMEOUT_MS", 250, { min: 1, max: 10_000 }, env),
    maxKeys: envInt("RATE_LIMIT_MAX_KEYS", DEFAULT_MAX_KEYS, { min: 1000, max: 10_000_000 }, env),
    trustedProxyHops: envInt("TRUSTED_PROXY_HOPS", 0, { min: 0, max: 10 }, env),
  };
}
