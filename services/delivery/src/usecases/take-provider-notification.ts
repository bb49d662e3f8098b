import { AppError } from "@emailsvc/errors";
import type { Logger } from "@emailsvc/telemetry";
import type { CrossTenantCollection } from "@emailsvc/storage";
import type { Bounce } from "../domain/email.js";
import { scrubReason } from "../domain/message.js";
import { readSesNotification } from "../domain/ses-notification.js";
import { isComplaint } from "../domain/feedback-report.js";
import { isSnsSubscribeUrl, parseSnsMessage, SnsMessageRefused, type CertificateFetcher, type SnsMessage, type SnsSignatureVerifier } from "../domain/sns-signature.js";
import type { EmailDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { bounceOfReport } from "./apply-feedback-report.js";
import { recordComplaint, recordDelivered, recordLateBounce, type FeedbackDeps } from "./record-feedback.js";

// Amazon SES's notifications (bounces, complaints, deliveries), as SNS posts
// them to the gateway, which hands the body over unread. The signature is the
// only authentication (no tenant, no key): a message is refused unless its
// topic is one of SES_NOTIFICATION_TOPIC_ARNS and SNS signed it. A
// subscription is confirmed by visiting its SubscribeURL; a notification
// finds its email by SES's MessageId (provider_message_id, across tenants)
// and is applied by the same guarded writes as the bounce receiver's reports
// (record-feedback.ts), so SNS's redeliveries change nothing.

export interface ProviderNotificationDeps extends FeedbackDeps {
  /** SES_NOTIFICATION_TOPIC_ARNS; empty: notifications are not taken (404 `provider_notifications_disabled`). */
  topics: ReadonlySet<string>;
  verifier: SnsSignatureVerifier;
  /** Visits a SubscribeURL (the verifier's fetcher: HTTPS, no redirects, bounded). */
  fetch: CertificateFetcher;
  emails: CrossTenantCollection<EmailDoc>;
  scope(tenant: string): Pick<TenantRepositories, "emails">;
  logger: Logger;
}

/** What became of a notification; every one of these is answered 200 (SNS redelivers anything else). */
export type NotificationOutcome = "applied" | "unchanged" | "subscription_confirmed" | "ignored";

/** Longest body taken (the gateway bounds it too): SES's notifications are a few KiB, a bounce of many recipients some tens. */
export const MAX_NOTIFICATION_BYTES = 256 * 1024;

export async function takeSesNotification(deps: ProviderNotificationDeps, body: Uint8Array): Promise<NotificationOutcome> {
  if (deps.topics.size === 0) {
    throw new AppError("not_found", "provider_notifications_disabled", "This platform takes no SES notifications (SES_NOTIFICATION_TOPIC_ARNS is not set).");
  }
  if (body.byteLength > MAX_NOTIFICATION_BYTES) throw new AppError("too_large", "payload_too_large", `An SNS message is at most ${MAX_NOTIFICATION_BYTES} bytes.`);
  let message: SnsMessage;
  try {
    message = parseSnsMessage(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch (err) {
    const reason = err instanceof SnsMessageRefused ? err.reason : "the body is not UTF-8";
    throw new AppError("invalid", "sns_message_malformed", `Not an SNS message: ${reason}.`);
  }
  // Before the signature: a topic nobody configured costs no certificate fetch.
  if (!deps.topics.has(message.TopicArn)) throw new AppError("forbidden", "sns_topic_not_allowed", "The message's TopicArn is not one of SES_NOTIFICATION_TOPIC_ARNS.");
  try {
    await deps.verifier.verify(message);
  } catch (err) {
    if (!(err instanceof SnsMessageRefused)) throw err;
    // A certificate that could not be fetched says nothing about the message: SNS retries it.
    if (/could not be fetched/.test(err.reason)) throw new AppError("unavailable", "unavailable", "The SNS signing certificate could not be fetched; retry later.");
    throw new AppError("forbidden", "sns_signature_invalid", `The SNS signature does not verify: ${err.reason}.`);
  }
  switch (message.Type) {
    case "SubscriptionConfirmation":
      return confirmSubscription(deps, message);
    case "UnsubscribeConfirmation":
      deps.logger.info({ topic: message.TopicArn }, "SES notifications: SNS says the subscription was removed");
      return "ignored";
    case "Notification":
      return applyNotification(deps, message);
  }
}

async function confirmSubscription(deps: ProviderNotificationDeps, message: SnsMessage): Promise<NotificationOutcome> {
  const url = message.SubscribeURL ?? "";
  if (!isSnsSubscribeUrl(url)) throw new AppError("invalid", "sns_message_malformed", "Not an SNS message: SubscribeURL is not an https://sns.<region>.amazonaws.com/?Action=ConfirmSubscription URL.");
  try {
    await deps.fetch(url);
  } catch {
    throw new AppError("unavailable", "unavailable", "SNS did not answer the subscription's confirmation; it sends the confirmation again.");
  }
  deps.logger.info({ topic: message.TopicArn }, "SES notifications: subscription confirmed");
  return "subscription_confirmed";
}

async function applyNotification(deps: ProviderNotificationDeps, message: SnsMessage): Promise<NotificationOutcome> {
  const event = readSesNotification(message.Message);
  if (event.kind === "unrecognised") {
    deps.logger.info({ reason: event.reason }, "SES notifications: not a bounce, complaint or delivery; ignored");
    return "ignored";
  }
  const [email] = await deps.emails.find({ provider_message_id: event.sesMessageId }, { limit: 1 });
  if (!email) {
    // Another platform's mail on a shared configuration set, or an email no longer kept.
    deps.logger.info({ kind: event.kind }, "SES notifications: no email has this SES message id; ignored");
    return "ignored";
  }
  const scope = deps.scope(email.tenant);
  // Only the email's own recipient counts (an erased email's to_key is no address, so it never matches).
  const ours = (recipient: string | undefined) => recipient !== undefined && recipient === email.to_key;
  let moved: boolean;
  switch (event.kind) {
    case "bounce": {
      const recipient = event.recipients.find((r) => ours(r.recipient));
      if (!recipient) return ignoredAsNotOurs(deps, email, event.kind);
      // SES's own verdict decides when it gives one; `undetermined` falls back to the DSN rule.
      const bounce: Bounce =
        event.bounceType === "undetermined"
          ? bounceOfReport(recipient, email.to)
          : { type: event.bounceType === "permanent" ? "hard" : "soft", diagnostic: scrubReason(recipient.diagnostic ?? recipient.status, email.to) };
      moved = await recordLateBounce(deps, scope, email._id, bounce);
      deps.logger.info({ email_id: email._id, bounce_type: bounce.type, applied: moved }, "SES notifications: bounce");
      break;
    }
    case "complaint": {
      if (!event.recipients.some((r) => ours(r))) return ignoredAsNotOurs(deps, email, event.kind);
      // A report the recipient marked as not spam is no complaint.
      if (!isComplaint(event.feedbackType)) return "ignored";
      moved = await recordComplaint(deps, scope, email._id);
      deps.logger.info({ email_id: email._id, applied: moved }, "SES notifications: complaint");
      break;
    }
    case "delivered": {
      if (!event.recipients.some((r) => ours(r.recipient))) return ignoredAsNotOurs(deps, email, event.kind);
      moved = await recordDelivered(deps, scope, email._id);
      deps.logger.info({ email_id: email._id, applied: moved }, "SES notifications: delivery");
      break;
    }
  }
  return moved ? "applied" : "unchanged";
}

function ignoredAsNotOurs(deps: ProviderNotificationDeps, email: EmailDoc, kind: string): NotificationOutcome {
  deps.logger.info({ email_id: email._id, kind }, "SES notifications: names none of the email's recipient; ignored");
  return "ignored";
}
