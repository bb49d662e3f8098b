import { STATUSES, type EmailStatus } from "../domain/email.js";
import type { Scope } from "./deps.js";

/**
 * How many of the tenant's emails were queued at or after `sinceMs`, by
 * their status now: one `$match`/`$group` over the tenant's emails of the
 * span (index `count_since`). Statuses with none are left out.
 */
export async function countEmails(scope: Scope, sinceMs: number): Promise<Array<{ status: EmailStatus; count: number }>> {
  const counts = await scope.emails.countBy({ queued_at: { $gte: sinceMs } }, "status");
  return STATUSES.flatMap((status) => {
    const count = counts.get(status) ?? 0;
    return count > 0 ? [{ status, count }] : [];
  });
}
