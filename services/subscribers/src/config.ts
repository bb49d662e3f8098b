import { envInt, type Env } from "@emailsvc/runtime";

/** The subscribers service's own settings (the common ones are the skeleton's). */
export interface SubscribersConfig {
  /** OUTBOX_SWEEP_INTERVAL_MS: how often the outbox sweep looks for events a crash or bus outage left (default 2000). */
  sweepIntervalMs: number;
}

export function loadConfig(env: Env = process.env): SubscribersConfig {
  return { sweepIntervalMs: envInt("OUTBOX_SWEEP_INTERVAL_MS", 2000, { min: 10, max: 600_000 }, env) };
}
