import { envInt, envOptional, type Env } from "@emailsvc/runtime";

/** The subscribers service's own settings (the common ones are the skeleton's). */
export interface SubscribersConfig {
  /** OUTBOX_SWEEP_INTERVAL_MS: how often the outbox sweep looks for events a crash or bus outage left (default 2000). */
  sweepIntervalMs: number;
  /**
   * SUPPRESSION_KEYS as set (`kid:base64secret[,…]`, as TOKEN_SIGNING_KEYS):
   * the keys of the hashes that suppress erased addresses. Required on
   * MongoDB; on the embedded store a development key is kept under DATA_DIR.
   */
  suppressionKeys: string | undefined;
}

export function loadConfig(env: Env = process.env): SubscribersConfig {
  return {
    sweepIntervalMs: envInt("OUTBOX_SWEEP_INTERVAL_MS", 2000, { min: 10, max: 600_000 }, env),
    suppressionKeys: envOptional("SUPPRESSION_KEYS", env),
  };
}
