import type { DsnRecipient } from "./feedback-report.js";

// What Amazon SES reports about a message it took, read: the SES event in an
// SNS notification's Message (sns-signature.ts verifies the notification
// first), either an identity notification (`notificationType`) or a
// configuration set's event (`eventType`). Bounces and deliveries come out as
// the same per-recipient records the DSN reader makes of a returned report
// (feedback-report.ts), so one rule applies to both; a complaint as its
// recipients and feedback type. Which email it is about is SES's
// `mail.messageId`, the id SendEmail answered. Applying them to emails and
// subscribers is the next step (services/delivery/README.md).

export type SesEvent =
  | {
      kind: "bounce";
      /** mail.messageId: the id SES answered SendEmail with. */
      sesMessageId: string;
      /** SES's bounceType: `permanent` (hard), `transient` (soft: SES gave up, mailbox full, say) or `undetermined`. */
      bounceType: "permanent" | "transient" | "undetermined";
      /** bounceSubType as SES says it (`General`, `NoEmail`, `Suppressed`, `MailboxFull`, …). */
      bounceSubType: string | undefined;
      recipients: DsnRecipient[];
    }
  | {
      kind: "complaint";
      sesMessageId: string;
      /** complaintFeedbackType (`abuse`, `not-spam`, …, lower case), when the reporter gave one. */
      feedbackType: string | undefined;
      /** complainedRecipients (lower case). */
      recipients: string[];
    }
  | {
      kind: "delivered";
      sesMessageId: string;
      /** Each recipient with action `delivered`, status 2.0.0 and the receiving server's reply as diagnostic. */
      recipients: DsnRecipient[];
    }
  | { kind: "unrecognised"; reason: string };

const MAX_DIAGNOSTIC = 500;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const address = (value: unknown): string | undefined => {
  const raw = text(value)?.trim();
  // "Name <a@b>" or a@b.
  const inner = raw ? (/<([^<>]+)>\s*$/.exec(raw)?.[1] ?? raw) : undefined;
  return inner?.includes("@") ? inner.toLowerCase() : undefined;
};

/** `smtp; 550 5.1.1 user unknown` → its reply code and text, as the DSN reader reads Diagnostic-Code. */
function diagnosticOf(value: unknown): Pick<DsnRecipient, "diagnosticCode" | "diagnostic"> {
  const field = text(value);
  const diagnostic = field?.includes(";") ? field.slice(field.indexOf(";") + 1).trim() : field?.trim();
  const code = /^([2-5]\d\d)\b/.exec(diagnostic ?? "")?.[1];
  return { diagnosticCode: code ? Number(code) : undefined, diagnostic: diagnostic ? diagnostic.slice(0, MAX_DIAGNOSTIC) : undefined };
}

const BOUNCE_TYPES = { Permanent: "permanent", Transient: "transient", Undetermined: "undetermined" } as const;

/**
 * The SES event in an SNS Notification's `Message` (a JSON string). Anything
 * that is not a Bounce, Complaint or Delivery, or lacks what it needs, is
 * `unrecognised` with a reason naming fields, never their values.
 */
export function readSesNotification(message: string): SesEvent {
  let event: unknown;
  try {
    event = JSON.parse(message);
  } catch {
    return { kind: "unrecognised", reason: "the Message is not JSON" };
  }
  if (!isObject(event)) return { kind: "unrecognised", reason: "the Message is not a JSON object" };
  const type = text(event.eventType) ?? text(event.notificationType);
  const sesMessageId = isObject(event.mail) ? text(event.mail.messageId) : undefined;
  if (!type) return { kind: "unrecognised", reason: "neither eventType nor notificationType" };
  if (!sesMessageId) return { kind: "unrecognised", reason: "no mail.messageId" };
  switch (type) {
    case "Bounce": {
      const bounce = event.bounce;
      if (!isObject(bounce) || !Array.isArray(bounce.bouncedRecipients)) return { kind: "unrecognised", reason: "a Bounce without bounce.bouncedRecipients" };
      const bounceType = BOUNCE_TYPES[text(bounce.bounceType) as keyof typeof BOUNCE_TYPES] ?? "undetermined";
      const recipients: DsnRecipient[] = [];
      for (const entry of bounce.bouncedRecipients) {
        if (!isObject(entry)) continue;
        const recipient = address(entry.emailAddress);
        if (!recipient) continue;
        // SES omits status and action when it has no DSN to quote (a suppressed address, say): the bounce type says which class.
        const status = /^[245]\.\d{1,3}\.\d{1,3}/.exec(text(entry.status) ?? "")?.[0] ?? (bounceType === "transient" ? "4.0.0" : "5.0.0");
        recipients.push({ recipient, action: "failed", status, ...diagnosticOf(entry.diagnosticCode) });
      }
      if (recipients.length === 0) return { kind: "unrecognised", reason: "a Bounce naming no recipient" };
      return { kind: "bounce", sesMessageId, bounceType, bounceSubType: text(bounce.bounceSubType), recipients };
    }
    case "Complaint": {
      const complaint = event.complaint;
      if (!isObject(complaint) || !Array.isArray(complaint.complainedRecipients)) return { kind: "unrecognised", reason: "a Complaint without complaint.complainedRecipients" };
      const recipients = complaint.complainedRecipients.flatMap((entry) => (isObject(entry) && address(entry.emailAddress) ? [address(entry.emailAddress)!] : []));
      if (recipients.length === 0) return { kind: "unrecognised", reason: "a Complaint naming no recipient" };
      return { kind: "complaint", sesMessageId, feedbackType: text(complaint.complaintFeedbackType)?.toLowerCase(), recipients };
    }
    case "Delivery": {
      const delivery = event.delivery;
      if (!isObject(delivery) || !Array.isArray(delivery.recipients)) return { kind: "unrecognised", reason: "a Delivery without delivery.recipients" };
      const reply = diagnosticOf(delivery.smtpResponse);
      const recipients = delivery.recipients.flatMap((entry): DsnRecipient[] => {
        const recipient = address(entry);
        return recipient ? [{ recipient, action: "delivered", status: "2.0.0", ...reply }] : [];
      });
      if (recipients.length === 0) return { kind: "unrecognised", reason: "a Delivery naming no recipient" };
      return { kind: "delivered", sesMessageId, recipients };
    }
    default:
      return { kind: "unrecognised", reason: `an event of type ${/^[A-Za-z]{1,40}$/.test(type) ? type : "(not a name)"}` };
  }
}
