import { Rerunner } from "@emailsvc/async";
import { envInt, type Env } from "@emailsvc/runtime";
import type { Doc, DocumentStore, Filter } from "@emailsvc/storage";
import type { Logger } from "@emailsvc/telemetry";
import { SESSION_IDLE_MS } from "./store.js";

// What the dashboard's people leave behind and nobody needs once it has run
// out: sessions past their end (idle or absolute), invitations and password
// resets past their expiry (used or not: their one-time tokens are dead
// either way), and audit-log entries older than the retention
// (AUDIT_LOG_RETENTION_DAYS, default 400: a year and a bit, so "what
// changed at this time last year" can be answered). Every gateway replica
// runs the sweep; a delete of what is already gone is no harm.

export const DEFAULT_AUDIT_RETENTION_DAYS = 400;
const SWEEP_INTERVAL_MS = 3_600_000;

/** AUDIT_LOG_RETENTION_DAYS: how long the account's audit log keeps an entry (1 to 3,650 days). */
export function auditRetentionDaysFromEnv(env: Env = process.env): number {
  return envInt("AUDIT_LOG_RETENTION_DAYS", DEFAULT_AUDIT_RETENTION_DAYS, { min: 1, max: 3650 }, env);
}

export interface SweepCounts {
  auditEntries: number;
  sessions: number;
  invitations: number;
  passwordResets: number;
}

/** One pass: deletes what ran out by `now`. */
export async function sweepMembersData(store: DocumentStore, options: { auditRetentionDays: number; now?: Date }): Promise<SweepCounts> {
  const now = options.now ?? new Date();
  const iso = (ms: number) => new Date(ms).toISOString();
  const expired = { expires_at: { $lte: now.toISOString() } } as Filter<Doc>;
  return {
    auditEntries: await store.collection("audit_log").deleteMany({ at: { $lt: iso(now.getTime() - options.auditRetentionDays * 86_400_000) } } as Filter<Doc>),
    sessions: await store.collection("sessions").deleteMany({ $or: [expired, { last_seen_at: { $lte: iso(now.getTime() - SESSION_IDLE_MS) } }] } as Filter<Doc>),
    invitations: await store.collection("invitations").deleteMany(expired),
    passwordResets: await store.collection("password_resets").deleteMany(expired),
  };
}

/** Runs the sweep at start and hourly (the timer does not keep the process alive); stop() ends it. */
export function startMembersSweep(store: DocumentStore, options: { auditRetentionDays: number; logger: Logger; intervalMs?: number }): { stop(): Promise<void> } {
  const runner = new Rerunner(
    async () => {
      const counts = await sweepMembersData(store, { auditRetentionDays: options.auditRetentionDays });
      if (Object.values(counts).some((n) => n > 0)) options.logger.info({ deleted: counts }, "members' expired data swept");
    },
    (err) => options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "members' sweep failed; next pass in an hour"),
  );
  const timer = setInterval(() => runner.kick(), options.intervalMs ?? SWEEP_INTERVAL_MS);
  timer.unref();
  runner.kick();
  return {
    stop: async () => {
      clearInterval(timer);
      await runner.stop();
    },
  };
}
