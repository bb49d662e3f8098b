import { DEFAULT_TEST_MODE_DAILY_LIMIT, parsePolicy, parseTestModeDailyLimit } from "@emailsvc/ratelimit";
import { ConfigError, envInt, envOptional, envString, type Env } from "@emailsvc/runtime";
import type { CampaignSettings } from "./usecases/deps.js";

/** The campaigns service's own settings (the common ones and the URLs are the skeleton's). */
export type CampaignsConfig = CampaignSettings;

export const DEFAULT_MAX_IN_FLIGHT = 5000;

/** Reads the environment once; a bad value stops the start with a message naming the variable. */
export function loadConfig(env: Env = process.env): CampaignsConfig {
  let rate;
  try {
    rate = parsePolicy(envString("CAMPAIGN_RATE", "off", env));
  } catch (err) {
    throw new ConfigError(`CAMPAIGN_RATE ${err instanceof Error ? err.message : String(err)}`);
  }
  const daily = envOptional("CAMPAIGN_DAILY_LIMIT", env);
  let testModeDailyLimit;
  try {
    testModeDailyLimit = parseTestModeDailyLimit(envOptional("TEST_MODE_DAILY_LIMIT", env), DEFAULT_TEST_MODE_DAILY_LIMIT);
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  return {
    // Each tenant's messages per window, e.g. "100/1s"; "off": as fast as delivery takes them.
    rate,
    dailyLimit: daily === undefined || daily === "off" ? null : envInt("CAMPAIGN_DAILY_LIMIT", 0, { min: 1, max: 100_000_000 }, env),
    scheduleMaxAgeMs: envInt("CAMPAIGN_SCHEDULE_MAX_AGE_SECONDS", 3600, { min: 0, max: 30 * 24 * 3600 }, env) * 1000,
    maxInFlight: envInt("CAMPAIGN_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT, { min: 1, max: 1_000_000 }, env),
    // 0: the send request copies the audience's first page only and the dispatcher the rest, while it sends.
    snapshotBudgetMs: envInt("CAMPAIGN_SNAPSHOT_BUDGET_MS", 0, { min: 0, max: 300_000 }, env),
    // Test mode's recipients per account in any 24 hours, charged as they are handed to delivery (delivery
    // counts its own sends against the same number).
    testModeDailyLimit,
  };
}
