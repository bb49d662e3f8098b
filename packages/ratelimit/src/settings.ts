import { ConfigError, envOptional, type Env } from "@emailsvc/runtime";
import type { Policy } from "./gcra.js";
import { parsePolicy } from "./policy.js";

// Reading budgets from the environment, as every service that limits
// requests does: a bad value stops the start, naming the variable and what
// it holds.

/** The budget of a variable: its value, else `fallback`; "off" is null (no such budget). */
export function budgetSetting(env: Env, name: string, fallback: string): Policy | null {
  const raw = envOptional(name, env);
  try {
    return parsePolicy(raw ?? fallback);
  } catch (error) {
    throw new ConfigError(`environment variable ${name} ${(error as Error).message}, got "${raw}"`);
  }
}

/**
 * The preference-center budgets (a subscriber's own requests, through the
 * gateway's API or the portal page): per subscriber, and per account and
 * mode (all its subscribers together), by class: `read` (a page load),
 * `write` (a click), `privacy` (the export and the erasure, which read every
 * service's part or end everything). The portal charges them; the gateway
 * knows their names only to let them pass its check of RATE_LIMIT_* names.
 */
export type PreferenceRateClass = "read" | "write" | "privacy";
export const PREFERENCE_RATE_CLASSES: readonly PreferenceRateClass[] = ["read", "write", "privacy"];

/** Variables of the preference budgets start so; a name of this shape the portal does not read stops its start. */
export const PREFERENCE_BUDGET_PREFIX = /^RATE_LIMIT_(TENANT_)?PREFERENCE_/;
