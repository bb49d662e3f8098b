import { parsePolicy, type Policy } from "@emailsvc/ratelimit";
import { ConfigError, envInt, envOptional, envString, type Env } from "@emailsvc/runtime";
import { frameAncestorsProblem } from "./domain/frame-ancestors.js";

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
}

export function loadConfig(env: Env = process.env): PortalConfig {
  const pagePort = envInt("PORTAL_PORT", 8081, { min: 0, max: 65535 }, env);
  return {
    pagePort,
    pageHost: envString("PORTAL_HOST", "127.0.0.1", env),
    frameAncestors: frameAncestors(envString("PORTAL_FRAME_ANCESTORS", "*", env)),
    trustedProxyHops: envInt("TRUSTED_PROXY_HOPS", 0, { min: 0, max: 10 }, env),
    tokenSigningKeys: envOptional("TOKEN_SIGNING_KEYS", env),
    linkTemplate: envString("PORTAL_LINK_TEMPLATE", "preference-link", env),
    linkRequestsPerIp: policy("PORTAL_LINK_REQUEST_RATE_IP", "10/1h", env),
    linkRequestsPerAddress: policy("PORTAL_LINK_REQUEST_RATE_ADDRESS", "3/1h", env),
  };
}

/** `*`, `'self'`, `'none'` or a space-separated list of origins (https://shop.example.com, https://*.example.com). */
function frameAncestors(value: string): string[] {
  const sources = value.trim().split(/\s+/).filter(Boolean);
  const problem = sources.length === 0 ? "no source given" : frameAncestorsProblem(sources);
  if (problem) throw new ConfigError(`PORTAL_FRAME_ANCESTORS: ${problem}`);
  return sources;
}

function policy(name: string, fallback: string, env: Env): Policy {
  let parsed;
  try {
    parsed = parsePolicy(envString(name, fallback, env));
  } catch (err) {
    throw new ConfigError(`${name} ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!parsed) throw new ConfigError(`${name} cannot be off: the page must not mail links without a limit`);
  return parsed;
}
