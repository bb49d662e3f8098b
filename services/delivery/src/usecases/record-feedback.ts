import { withOutbox } from "@emailsvc/outbox";
import type { TenantCollection } from "@emailsvc/storage";
import type { Bounce, EmailStatus, StatusChange } from "../domain/email.js";
import { publicError, type PublicErrorCode } from "../domain/provider.js";
import type { EmailDoc, OutboxEntry } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { outboxEntry, type OutboxFlusher } from "./deps.js";
import { emailsByStatus } from "./metrics.js";

// What comes back after an email left: a bounce a relay returns later (a
// delivery status notification to the return path), a complaint (a
// feedback-loop report) and, from a provider that reports it, the delivery. The inbound receiver (a later change: VERP return
// paths, RFC 3464 and RFC 5965 parsing) calls these once it has mapped a
// report to its email; so may an HTTP provider's notifications. Each is one
// guarded write with its `email.status` outbox entry, whose effect tells the
// subscribers service (messaging/outbox.ts: RecordDeliveryProblem), so a crash
// loses no report and a repeated report changes nothing.

export interface FeedbackDeps {
  relay: OutboxFlusher;
  now: () => number;
}

/** Statuses a sent email may move from when feedback comes. */
const AFTER_SENDING: EmailStatus[] = ["sent", "delivered"];

/**
 * A bounce reported after the relay took the email: `sent`/`delivered` →
 * `bounced` with its type and diagnostic (addresses already removed by the
 * caller). False when the email is unknown to the tenant, or not in a state a
 * bounce may follow (already bounced, complained, never sent): nothing changes.
 */
export async function recordLateBounce(deps: FeedbackDeps, scope: Pick<TenantRepositories, "emails">, emailId: string, bounce: Bounce): Promise<boolean> {
  const reason: PublicErrorCode = bounce.type === "hard" ? "recipient_rejected" : "attempts_exhausted";
  return move(deps, scope.emails, emailId, "bounced", bounce.diagnostic, {
    bounce,
    error: publicError(reason, bounce.diagnostic),
    failure_reason: reason,
  });
}

/** A complaint about a sent email (its recipient called it spam): `sent`/`delivered`/`bounced` → `complained`. */
export async function recordComplaint(deps: FeedbackDeps, scope: Pick<TenantRepositories, "emails">, emailId: string): Promise<boolean> {
  return move(deps, scope.emails, emailId, "complained", "", {});
}

/**
 * The receiving server took the email (a provider's delivery notification):
 * `sent` → `delivered`. Only from `sent`: a delivery reported after a bounce
 * or a complaint (notifications arrive in any order) changes nothing.
 */
export async function recordDelivered(deps: FeedbackDeps, scope: Pick<TenantRepositories, "emails">, emailId: string): Promise<boolean> {
  return move(deps, scope.emails, emailId, "delivered", "", {});
}

async function move(
  deps: FeedbackDeps,
  emails: TenantCollection<EmailDoc>,
  emailId: string,
  status: "bounced" | "complained" | "delivered",
  detail: string,
  set: Partial<Pick<EmailDoc, "bounce" | "error" | "failure_reason">>,
): Promise<boolean> {
  const at = deps.now();
  const from: EmailStatus[] = status === "complained" ? [...AFTER_SENDING, "bounced"] : status === "delivered" ? ["sent"] : AFTER_SENDING;
  const change: StatusChange = { status, at, detail };
  const written = await emails.updateOne(
    { _id: emailId, status: { $in: from } },
    withOutbox<EmailDoc, OutboxEntry>(
      { $set: { ...set, status, updated_at: at }, $push: { status_history: { $each: [change] } } },
      [outboxEntry(at, "email.status", status)],
      at,
    ),
  );
  if (!written) return false;
  emailsByStatus.inc({ status });
  await deps.relay.afterWrite(written);
  return true;
}
