import { budgetSetting, DEFAULT_MAX_KEYS, parsePolicy, PREFERENCE_BUDGET_PREFIX, PREFERENCE_RATE_CLASSES, type Policy, type PreferenceRateClass } from "@emailsvc/ratelimit";
import type { PreferenceBudgetConfig } from "./usecases/budgets.js";
import { ConfigError, DEFAULT_PORTAL_PORT, envInt, envOptional, envString, switchSetting, type Env } from "@emailsvc/runtime";
import { frameAncestorsProblem } from "./domain/frame-ancestors.js";
import { hostOf } from "./domain/custom-domain.js";
import { DEFAULT_TIMING, type Timing } from "./domain/domain-states.js";
import type { KubeRoutingSettings } from "./kube/routing.js";

/** Custom portal domains (CUSTOM_DOMAIN*): off unless CUSTOM_DOMAINS_ENABLED=true. */
export interface CustomDomainConfig {
  enabled: boolean;
  /** CUSTOM_DOMAIN_TARGET's host: what customers point their CNAME at. */
  target: string;
  /** The hosts of PUBLIC_API_URL, PREFERENCES_URL and CUSTOM_DOMAIN_TARGET: never a customer's. */
  platformHosts: string[];
  /** PREFERENCES_URL's host: the page answers on it and on active custom domains only. */
  preferencesHost: string;
  /** The Kubernetes objects' settings (CUSTOM_DOMAIN_NAMESPACE, _ISSUER_NAME, _ISSUER_KIND, _INGRESS_CLASS, _SERVICE_NAME, _SERVICE_PORT, _INSTANCE). */
  kube: KubeRoutingSettings;
  /** CUSTOM_DOMAIN_ISSUE_RATE: new Certificates per window, all replicas together (default 50/1h). */
  issueRate: Policy;
  timing: Timing;
  /** CUSTOM_DOMAIN_DNS_SERVERS: resolvers to ask (comma-separated ip[:port]); unset: the system's. */
  dnsServers: string[] | undefined;
  /** CUSTOM_DOMAIN_RECONCILE_INTERVAL_MS: how often the reconciler looks for due work (default 5000). */
  reconcileIntervalMs: number;
  /** How the Kubernetes API is reached: in a Pod (KUBERNETES_SERVICE_HOST set) its ServiceAccount, else KUBECONFIG. */
  kubeAccess: { inCluster: boolean; kubeconfig: string | undefined };
}

/** The portal's own settings (the common ones and the URLs are the skeleton's). */
export interface PortalConfig {
  /** PORTAL_PORT: the portal page's HTTP port (default 8081). */
  pagePort: number;
  /** PORTAL_HOST: its address (default 127.0.0.1; 0.0.0.0 in a container). */
  pageHost: string;
  /** PORTAL_FRAME_ANCESTORS: the CSP frame-ancestors of the page unless an account set its own, default `*` (any site may embed it). */
  frameAncestors: string[];
  /** TRUSTED_PROXY_HOPS: proxies in front whose X-Forwarded-For is trusted for the audit trail's IP (default 0). */
  trustedProxyHops: number;
  /** PORTAL_LINK_TEMPLATE: the slug of the account's template a fresh link is mailed with (default preference-link). */
  linkTemplate: string;
  /** PORTAL_LINK_REQUEST_RATE_IP, PORTAL_LINK_REQUEST_RATE_ADDRESS: "send me a new link" per client address and per address asked for. */
  linkRequestsPerIp: Policy;
  linkRequestsPerAddress: Policy;
  /** TOKEN_SIGNING_KEYS as set: verifies preference tokens and signs page sessions (required on MongoDB; see packages/tokens). */
  tokenSigningKeys: string | undefined;
  customDomains: CustomDomainConfig;
  /** A subscriber's own requests, through the gateway's API and this page alike (usecases/budgets.ts). */
  rateLimits: PreferenceRateLimits;
  /** Public signup forms (usecases/sign-up.ts). */
  signupForms: SignupFormConfig;
}

/** Public signup forms: where they post, their budgets and their proof of work. */
export interface SignupFormConfig {
  /** PREFERENCES_URL (else http://localhost:PORTAL_PORT): the forms post to `<it>/subscribe/<id>`. */
  preferencesUrl: string;
  /** SIGNUP_RATE_IP (60/1h), SIGNUP_RATE_ADDRESS (3/1h), SIGNUP_RATE_FORM (1000/1h). */
  limits: { perIp: Policy; perAddress: Policy; perForm: Policy };
  /** SIGNUP_POW_MAX_NUMBER (100000): the work of a challenge; SIGNUP_POW_TTL_SECONDS (600): how long one may be used. */
  pow: { maxNumber: number; ttlMs: number };
}

/** The preference budgets and where they are counted. */
export interface PreferenceRateLimits extends PreferenceBudgetConfig {
  /** RATE_LIMIT=off: none (load tests), as for the gateway. */
  enabled: boolean;
  /** RATE_LIMIT_STORE: `memory` (this process) or `mongo` (the portal's own database, `rate_limits`: shared by replicas, kept across restarts). */
  store: "memory" | "mongo";
  /** RATE_LIMIT_STORE_TIMEOUT_MS: longest wait for the shared store before a request is counted locally. */
  storeTimeoutMs: number;
  /** RATE_LIMIT_MAX_KEYS: most buckets one process remembers. */
  maxKeys: number;
}

// The preference budgets' variables, written out (scripts/helm-check.sh looks
// for each name in the code), and their defaults: per subscriber a minute's
// worth of clicking fits at once, the export and the erasure a few an hour;
// per tenant they bound what many subscribers together cost.
const PER_SUBSCRIBER: Record<PreferenceRateClass, [string, string]> = {
  read: ["RATE_LIMIT_PREFERENCE_READ", "60/60s"],
  write: ["RATE_LIMIT_PREFERENCE_WRITE", "30/60s"],
  privacy: ["RATE_LIMIT_PREFERENCE_PRIVACY", "5/1h"],
};
const PER_TENANT: Record<PreferenceRateClass, [string, string]> = {
  read: ["RATE_LIMIT_TENANT_PREFERENCE_READ", "100/1s"],
  write: ["RATE_LIMIT_TENANT_PREFERENCE_WRITE", "50/1s"],
  privacy: ["RATE_LIMIT_TENANT_PREFERENCE_PRIVACY", "20/60s"],
};

/** Reads the preference budgets; a misspelt one (RATE_LIMIT_PREFERENCE_EXPORT) stops the start, as the gateway does for its own. */
export function loadPreferenceRateLimits(env: Env): PreferenceRateLimits {
  const known = new Set([...Object.values(PER_SUBSCRIBER), ...Object.values(PER_TENANT)].map(([name]) => name));
  const unknown = Object.keys(env).filter((name) => PREFERENCE_BUDGET_PREFIX.test(name) && !known.has(name));
  if (unknown.length > 0) throw new ConfigError(`unknown environment variable ${unknown.join(", ")}; the preference budgets are ${[...known].join(", ")}`);
  const budgets = (names: Record<PreferenceRateClass, [string, string]>) =>
    Object.fromEntries(PREFERENCE_RATE_CLASSES.map((cls) => [cls, budgetSetting(env, names[cls][0], names[cls][1])])) as Record<PreferenceRateClass, Policy | null>;
  const store = (envOptional("RATE_LIMIT_STORE", env) ?? "memory").toLowerCase();
  if (store !== "memory" && store !== "mongo") throw new ConfigError(`environment variable RATE_LIMIT_STORE must be "memory" or "mongo", got "${env.RATE_LIMIT_STORE}"`);
  return {
    enabled: switchSetting(env, "RATE_LIMIT"),
    perSubscriber: budgets(PER_SUBSCRIBER),
    perTenant: budgets(PER_TENANT),
    store,
    storeTimeoutMs: envInt("RATE_LIMIT_STORE_TIMEOUT_MS", 250, { min: 1, max: 10_000 }, env),
    maxKeys: envInt("RATE_LIMIT_MAX_KEYS", DEFAULT_MAX_KEYS, { min: 1000, max: 10_000_000 }, env),
  };
}

export function loadConfig(env: Env = process.env): PortalConfig {
  const pagePort = envInt("PORTAL_PORT", DEFAULT_PORTAL_PORT, { min: 0, max: 65535 }, env);
  return {
    pagePort,
    pageHost: envString("PORTAL_HOST", "127.0.0.1", env),
    frameAncestors: frameAncestors(envString("PORTAL_FRAME_ANCESTORS", "*", env)),
    trustedProxyHops: envInt("TRUSTED_PROXY_HOPS", 0, { min: 0, max: 10 }, env),
    tokenSigningKeys: envOptional("TOKEN_SIGNING_KEYS", env),
    linkTemplate: envString("PORTAL_LINK_TEMPLATE", "preference-link", env),
    linkRequestsPerIp: policy("PORTAL_LINK_REQUEST_RATE_IP", "10/1h", env),
    linkRequestsPerAddress: policy("PORTAL_LINK_REQUEST_RATE_ADDRESS", "3/1h", env),
    customDomains: customDomainConfig(env, pagePort),
    rateLimits: loadPreferenceRateLimits(env),
    signupForms: signupFormConfig(env, pagePort),
  };
}

export function signupFormConfig(env: Env, pagePort: number): SignupFormConfig {
  return {
    preferencesUrl: (envOptional("PREFERENCES_URL", env) ?? `http://localhost:${pagePort || DEFAULT_PORTAL_PORT}`).replace(/\/+$/, ""),
    limits: {
      perIp: policy("SIGNUP_RATE_IP", "60/1h", env),
      perAddress: policy("SIGNUP_RATE_ADDRESS", "3/1h", env),
      perForm: policy("SIGNUP_RATE_FORM", "1000/1h", env),
    },
    pow: {
      maxNumber: envInt("SIGNUP_POW_MAX_NUMBER", 100_000, { min: 100, max: 10_000_000 }, env),
      ttlMs: envInt("SIGNUP_POW_TTL_SECONDS", 600, { min: 30, max: 86_400 }, env) * 1000,
    },
  };
}

function customDomainConfig(env: Env, pagePort: number): CustomDomainConfig {
  const flag = (envOptional("CUSTOM_DOMAINS_ENABLED", env) ?? "false").toLowerCase();
  if (flag !== "true" && flag !== "false") throw new ConfigError(`CUSTOM_DOMAINS_ENABLED must be true or false, got "${flag}"`);
  const enabled = flag === "true";
  const preferencesHost = hostOf(envOptional("PREFERENCES_URL", env) ?? `http://localhost:${pagePort}`) ?? "localhost";
  const targetSetting = envOptional("CUSTOM_DOMAIN_TARGET", env);
  const target = hostOf(targetSetting);
  if (targetSetting !== undefined && !target) throw new ConfigError(`CUSTOM_DOMAIN_TARGET must be a host name, got "${targetSetting}"`);
  if (enabled && !target) throw new ConfigError("CUSTOM_DOMAIN_TARGET is required with CUSTOM_DOMAINS_ENABLED=true: the host customers point their CNAME at");
  const required = (name: string): string => {
    const value = envOptional(name, env);
    if (enabled && !value) throw new ConfigError(`${name} is required with CUSTOM_DOMAINS_ENABLED=true`);
    return value ?? "";
  };
  const issuerKind = envString("CUSTOM_DOMAIN_ISSUER_KIND", "ClusterIssuer", env);
  if (issuerKind !== "Issuer" && issuerKind !== "ClusterIssuer") throw new ConfigError(`CUSTOM_DOMAIN_ISSUER_KIND must be Issuer or ClusterIssuer, got "${issuerKind}"`);
  const portSetting = envString("CUSTOM_DOMAIN_SERVICE_PORT", String(pagePort || DEFAULT_PORTAL_PORT), env);
  const servicePort = /^[0-9]+$/.test(portSetting) ? Number(portSetting) : portSetting;
  if (typeof servicePort === "number" ? servicePort < 1 || servicePort > 65535 : !/^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(servicePort)) {
    throw new ConfigError(`CUSTOM_DOMAIN_SERVICE_PORT must be a port number or a port name, got "${portSetting}"`);
  }
  const seconds = (name: string, fallbackMs: number, min: number, max: number) => envInt(name, Math.round(fallbackMs / 1000), { min, max }, env) * 1000;
  const dnsServers = envOptional("CUSTOM_DOMAIN_DNS_SERVERS", env)?.split(",").map((s) => s.trim()).filter(Boolean);
  const platformHosts = [
    hostOf(envOptional("PUBLIC_API_URL", env)),
    preferencesHost,
    target,
  ].filter((host): host is string => host !== undefined && host !== "localhost" && !/^[0-9.]+$|:/.test(host));
  return {
    enabled,
    target: target ?? "",
    platformHosts: [...new Set(platformHosts)],
    preferencesHost,
    kube: {
      namespace: required("CUSTOM_DOMAIN_NAMESPACE"),
      issuerName: required("CUSTOM_DOMAIN_ISSUER_NAME"),
      issuerKind,
      ingressClass: envOptional("CUSTOM_DOMAIN_INGRESS_CLASS", env),
      serviceName: required("CUSTOM_DOMAIN_SERVICE_NAME"),
      servicePort,
      instance: instanceOf(env),
    },
    issueRate: policy("CUSTOM_DOMAIN_ISSUE_RATE", "50/1h", env),
    timing: {
      ...DEFAULT_TIMING,
      recheckBaseMs: envInt("CUSTOM_DOMAIN_RECHECK_BASE_MS", DEFAULT_TIMING.recheckBaseMs, { min: 10, max: 3_600_000 }, env),
      dnsTimeoutMs: seconds("CUSTOM_DOMAIN_DNS_TIMEOUT_SECONDS", DEFAULT_TIMING.dnsTimeoutMs, 60, 30 * 24 * 3600),
      issueTimeoutMs: seconds("CUSTOM_DOMAIN_ISSUE_TIMEOUT_SECONDS", DEFAULT_TIMING.issueTimeoutMs, 60, 7 * 24 * 3600),
      retryBaseMs: seconds("CUSTOM_DOMAIN_RETRY_BASE_SECONDS", DEFAULT_TIMING.retryBaseMs, 1, 24 * 3600),
      maxIssuanceAttempts: envInt("CUSTOM_DOMAIN_MAX_ATTEMPTS", DEFAULT_TIMING.maxIssuanceAttempts, { min: 1, max: 20 }, env),
    },
    dnsServers: dnsServers && dnsServers.length > 0 ? dnsServers : undefined,
    reconcileIntervalMs: envInt("CUSTOM_DOMAIN_RECONCILE_INTERVAL_MS", 5000, { min: 10, max: 600_000 }, env),
    kubeAccess: { inCluster: envOptional("KUBERNETES_SERVICE_HOST", env) !== undefined, kubeconfig: envOptional("KUBECONFIG", env) },
  };
}

/** `*`, `'self'`, `'none'` or a space-separated list of origins (https://shop.example.com, https://*.example.com). */
function frameAncestors(value: string): string[] {
  const sources = value.trim().split(/\s+/).filter(Boolean);
  const problem = sources.length === 0 ? "no source given" : frameAncestorsProblem(sources);
  if (problem) throw new ConfigError(`PORTAL_FRAME_ANCESTORS: ${problem}`);
  return sources;
}

/**
 * app.kubernetes.io/instance of the objects: CUSTOM_DOMAIN_INSTANCE, else the
 * instance named in CUSTOM_DOMAIN_LABEL_SELECTOR (the chart's selector of our
 * objects), else "emailsvc".
 */
function instanceOf(env: Env): string {
  const given = envOptional("CUSTOM_DOMAIN_INSTANCE", env);
  const fromSelector = /(?:^|,)\s*app\.kubernetes\.io\/instance\s*=\s*([A-Za-z0-9._-]{1,63})\s*(?:,|$)/.exec(envOptional("CUSTOM_DOMAIN_LABEL_SELECTOR", env) ?? "")?.[1];
  const instance = given ?? fromSelector ?? "emailsvc";
  if (!/^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/.test(instance)) throw new ConfigError(`CUSTOM_DOMAIN_INSTANCE must be a label value (63 characters: letters, digits, - _ .), got "${instance}"`);
  return instance;
}

function policy(name: string, fallback: string, env: Env): Policy {
  let parsed;
  try {
    parsed = parsePolicy(envString(name, fallback, env));
  } catch (err) {
    throw new ConfigError(`${name} ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!parsed) throw new ConfigError(`${name} cannot be off: it protects against abuse (links mailed, certificates asked for, signups)`);
  return parsed;
}
