import { envInt, envOptional, type Env } from "@emailsvc/runtime";
import { CONFIRMATION_EXPIRY } from "./domain/double-opt-in.js";
import { DEFAULT_SOFT_BOUNCES, type SoftBouncePolicy } from "./usecases/record-delivery-problem.js";

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
  /** SOFT_BOUNCE_LIMIT in SOFT_BOUNCE_WINDOW_DAYS: soft bounces of one address that suppress it (default 3 in 30 days). */
  softBounces: SoftBouncePolicy;
  /** CONFIRMATION_EXPIRY_SWEEP_INTERVAL_MS: how often unconfirmed pending subscribers past their deadline are erased (default 60000). */
  expirySweepIntervalMs: number;
  /** CONFIRMATION_EXPIRY_MIN_SECONDS: the shortest confirmation window an account may set (default 60; a test lowers it). */
  minConfirmationExpirySeconds: number;
  /** IMPORT_LEASE_SECONDS: how long an import worker's claim on a job holds unrenewed (default 30): a crashed worker's job resumes after it. */
  importLeaseMs: number;
  /** IMPORT_BATCH_ROWS: rows an import handles and checkpoints together (default 1000). */
  importBatchRows: number;
}

export function loadConfig(env: Env = process.env): SubscribersConfig {
  return {
    sweepIntervalMs: envInt("OUTBOX_SWEEP_INTERVAL_MS", 2000, { min: 10, max: 600_000 }, env),
    suppressionKeys: envOptional("SUPPRESSION_KEYS", env),
    softBounces: {
      limit: envInt("SOFT_BOUNCE_LIMIT", DEFAULT_SOFT_BOUNCES.limit, { min: 1, max: 100 }, env),
      windowMs: envInt("SOFT_BOUNCE_WINDOW_DAYS", DEFAULT_SOFT_BOUNCES.windowMs / 86_400_000, { min: 1, max: 365 }, env) * 86_400_000,
    },
    expirySweepIntervalMs: envInt("CONFIRMATION_EXPIRY_SWEEP_INTERVAL_MS", 60_000, { min: 10, max: 3_600_000 }, env),
    minConfirmationExpirySeconds: envInt("CONFIRMATION_EXPIRY_MIN_SECONDS", CONFIRMATION_EXPIRY.minSeconds, { min: 1, max: CONFIRMATION_EXPIRY.minSeconds }, env),
    importLeaseMs: envInt("IMPORT_LEASE_SECONDS", 30, { min: 1, max: 3600 }, env) * 1000,
    importBatchRows: envInt("IMPORT_BATCH_ROWS", 1000, { min: 10, max: 10_000 }, env),
  };
}
