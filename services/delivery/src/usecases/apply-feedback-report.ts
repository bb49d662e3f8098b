import type { KeyRing } from "@emailsvc/tokens";
import type { Logger } from "@emailsvc/telemetry";
import type { CrossTenantCollection } from "@emailsvc/storage";
import type { Bounce } from "../domain/email.js";
import { isComplaint, type DsnRecipient } from "../domain/feedback-report.js";
import { scrubReason } from "../domain/message.js";
import { emailIdOfReturnPath } from "../domain/return-path.js";
import type { ArrivedReport } from "../inbound/bounce-receiver.js";
import type { EmailDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { recordComplaint, recordLateBounce, type FeedbackDeps } from "./record-feedback.js";

// A report the bounce receiver took, applied to the email it names: a DSN's
// failed recipient bounces the email (recordLateBounce: its status, and,
// through the outbox, the subscriber and the suppression list), a complaint
// marks it complained (recordComplaint). Repeats change nothing (the writes
// are guarded by the status).

export interface ApplyReportDeps extends FeedbackDeps {
  keys: KeyRing;
  emails: CrossTenantCollection<EmailDoc>;
  scope(tenant: string): Pick<TenantRepositories, "emails">;
  logger: Logger;
}

/**
 * Hard or soft, by the same rule as the relay's answers at send time (a 5xx
 * refuses for good, a 4xx is "not now"): the remote server's reply code when
 * the report gives one, else the status code's class. A relay that gave up
 * on a 4xx reports `failed` with a 5.x.x status and the 4xx as its
 * diagnostic (Haraka does): a soft bounce.
 */
export function bounceOfReport(recipient: DsnRecipient, emailTo: string): Bounce {
  const permanent = recipient.diagnosticCode !== undefined ? recipient.diagnosticCode >= 500 : recipient.status.startsWith("5");
  return { type: permanent ? "hard" : "soft", diagnostic: scrubReason(recipient.diagnostic ?? recipient.status, emailTo) };
}

export async function applyFeedbackReport(deps: ApplyReportDeps, arrived: ArrivedReport): Promise<void> {
  const { report } = arrived;
  if (report.kind === "unrecognised") return;
  // A complaint sent to the feedback address names its email by the return path it reports.
  const emailId =
    arrived.emailId ?? (report.kind === "complaint" && report.originalMailFrom ? (emailIdOfReturnPath(deps.keys, report.originalMailFrom) ?? undefined) : undefined);
  if (!emailId) {
    deps.logger.info({ kind: report.kind }, "bounce receiver: a report naming no email of ours; dropped");
    return;
  }
  const [email] = await deps.emails.find({ _id: emailId }, { limit: 1 });
  if (!email) {
    deps.logger.info({ email_id: emailId, kind: report.kind }, "bounce receiver: a report about an email no longer kept; dropped");
    return;
  }
  const scope = deps.scope(email.tenant);
  if (report.kind === "complaint") {
    if (!isComplaint(report.feedbackType)) return;
    const moved = await recordComplaint(deps, scope, emailId);
    deps.logger.info({ email_id: emailId, applied: moved }, "bounce receiver: complaint");
    return;
  }
  const failed = report.recipients.find((r) => r.action === "failed");
  if (!failed) {
    // delayed, delivered, relayed: the email's status does not change (a delay is the relay's to retry).
    deps.logger.info({ email_id: emailId, actions: report.recipients.map((r) => r.action) }, "bounce receiver: a delivery status report without a failure");
    return;
  }
  const bounce = bounceOfReport(failed, email.to ?? "");
  const moved = await recordLateBounce(deps, scope, emailId, bounce);
  deps.logger.info({ email_id: emailId, bounce_type: bounce.type, status: failed.status, applied: moved }, "bounce receiver: bounce");
}
