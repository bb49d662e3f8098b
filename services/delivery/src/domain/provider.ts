import type { delivery } from "@emailsvc/proto";
import type { OutgoingMessage } from "./message.js";
import type { ProviderName } from "./email.js";

// The provider port and what a failed send means. Pure.

export interface SendContext {
  /** The tenant key (`account:mode`) the email belongs to; the sandbox stores by it. */
  tenant: string;
  /** Aborted when the send must stop: shutdown past its grace, or the attempt's deadline. */
  signal: AbortSignal;
}

export interface SendResult {
  /** What the provider says it did, for logs (e.g. the relay's "250 OK queued as X"). */
  response: string;
  /** The provider's own id of the message (SES's MessageId), kept on the email; none from SMTP or the sandbox. */
  providerMessageId?: string | undefined;
}

/** Sends one message, or keeps it (sandbox). Throws a SendFailure when it did not. */
export interface EmailProvider {
  readonly name: ProviderName;
  send(message: OutgoingMessage, context: SendContext): Promise<SendResult>;
  /** Closes pooled connections. */
  close(): Promise<void>;
}

/**
 * How a send failed:
 * - `permanent`: the receiving side refused this message for good (SMTP 5xx),
 *   or it cannot be built (template gone, render error): the email fails at
 *   once, no retry.
 * - `transient`: the server answered, but not now (SMTP 4xx, a reply timeout):
 *   retried, and counted toward the attempt cap.
 * - `unreachable`: no server to talk to (connection refused or lost, DNS,
 *   connect/greeting timeout, 421, the templates or subscribers service down):
 *   retried without counting toward the attempt cap, since the message itself
 *   is not the problem; bounded by the queue lifetime instead.
 * - `aborted`: stopped by us (shutdown, the attempt's deadline, or its lease
 *   lost); the outcome is unknown, the lease decides what happens next.
 */
export type FailureKind = "permanent" | "transient" | "unreachable" | "aborted";

/**
 * The reasons an email may fail with. The email keeps its reason as a field
 * of its own (`failure_reason`, one of these codes) and, for people, the
 * `error` text the API shows: the code, followed by the relay's reply
 * (addresses removed) where the relay gave one, e.g. `recipient_rejected: 550
 * 5.1.1 <recipient>: User unknown`. Nothing else reaches a client: internal
 * detail goes to the logs and to the email's `last_error`, for operators.
 * The codes are the proto enum `emailsvc.delivery.v1.FailureReason`'s, by its
 * one table (`delivery.FAILURE_REASON_CODES` of @emailsvc/proto: a code
 * missing here, or one the enum lacks, does not compile), which the email,
 * SendEmail's answer and `email.status` carry, so that consumers never parse
 * `error`. Documented in the README.
 */
export const PUBLIC_ERRORS = {
  /** The template version the email was queued with no longer exists. */
  template_unavailable: "the template version the email was queued with no longer exists",
  /** The template could not be compiled or rendered with the email's variables. */
  template_render_failed: "the template could not be rendered with the email's variables",
  /** The relay refused the recipient for good (5xx to RCPT TO). */
  recipient_rejected: "the relay refused the recipient",
  /** The relay refused the message for good (5xx to MAIL FROM or DATA). */
  message_rejected: "the relay refused the message",
  /** The relay answered "try later" until the attempt cap. */
  attempts_exhausted: "the relay kept answering 'try later' until the attempt cap",
  /** No relay could be reached (or accepted our credentials) within the queue lifetime. */
  relay_unavailable: "the relay could not be reached within the queue lifetime",
  /** The templates or subscribers service could not be reached within the queue lifetime. */
  service_unavailable: "a service the send needs could not be reached within the queue lifetime",
  /** Marketing mail (a marketing template, or a campaign) whose recipient's subscriber unsubscribed. */
  recipient_unsubscribed: "the recipient unsubscribed: marketing mail is not sent to them",
  /** Any mail to a subscriber whose address bounced. */
  recipient_bounced: "the recipient's address bounced: no mail is sent to it",
  /** Any mail to a subscriber who complained about our mail. */
  recipient_complained: "the recipient complained about our mail: no mail is sent to them",
  /** Marketing mail to an address erased at its owner's request (kept as a keyed hash, suppressed). */
  recipient_suppressed: "the address was erased at its owner's request: marketing mail is not sent to it",
  /** The recipient's subscriber was erased before the email was sent. */
  recipient_erased: "the recipient's subscriber was erased before the email was sent",
  /** A campaign email whose campaign was cancelled before it was given to the provider. */
  campaign_cancelled: "the campaign was cancelled before the email was given to the provider",
  /** Live mail whose From (its template's) is not on a verified sending domain of the account when it is sent. */
  from_domain_not_verified: "the From address is not on a verified sending domain of the account",
} as const satisfies Record<delivery.FailureReasonCode, string>;

export type PublicErrorCode = delivery.FailureReasonCode;

/** The `error` of a failed email: its code, and the relay's reply when there is one. */
export function publicError(code: PublicErrorCode, reply = ""): string {
  return reply ? `${code}: ${reply}` : code;
}

/** What a failed attempt is about, before the retry rules decide whether the email fails. */
export type FailureCode = Exclude<PublicErrorCode, "attempts_exhausted"> | "relay_deferred" | "send_aborted";

export class SendFailure extends Error {
  /** The relay's reply, without addresses: safe to show (may be ""). */
  readonly reply: string;
  /** What happened, for operators and logs: no addresses, never shown to a client. */
  readonly detail: string;

  constructor(
    readonly kind: FailureKind,
    readonly code: FailureCode,
    details: { reply?: string; detail?: string } = {},
  ) {
    const reply = details.reply ?? "";
    const detail = details.detail || reply || code;
    super(detail);
    this.name = "SendFailure";
    this.reply = reply;
    this.detail = detail;
  }
}

export interface RetryPolicy {
  /** Attempts after which a transient failure fails the email. */
  maxAttempts: number;
  /** How long an email may wait for an unreachable provider before it fails. */
  maxQueueAgeMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 8, maxQueueAgeMs: 24 * 60 * 60 * 1000 };

/** Either try again, or fail the email with `reason` and `error` (its public text, see PUBLIC_ERRORS). */
export type Outcome = { retry: true } | { retry: false; reason: PublicErrorCode; error: string };

/** The outcome of giving up: the reason, and its text with the relay's reply. */
function failWith(reason: PublicErrorCode, reply = ""): Outcome {
  return { retry: false, reason, error: publicError(reason, reply) };
}

/** The public code a failure of this kind ends with once it is given up on. */
function finalCode(failure: SendFailure): PublicErrorCode {
  switch (failure.code) {
    case "relay_deferred":
    case "send_aborted":
      return "attempts_exhausted";
    default:
      return failure.code;
  }
}

/**
 * What to do after a failed attempt. `attempts` counts every attempt made so
 * far including this one, `transientFailures` the ones the server answered
 * "not now" to (including this one when it is one).
 */
export function afterFailure(
  failure: SendFailure,
  state: { attempts: number; transientFailures: number; queuedAt: number; now: number },
  policy: RetryPolicy,
): Outcome {
  switch (failure.kind) {
    case "permanent":
      return failWith(finalCode(failure), failure.reply);
    case "transient":
      if (state.transientFailures >= policy.maxAttempts) {
        return failWith("attempts_exhausted", failure.reply);
      }
      return { retry: true };
    case "unreachable":
      // A connection error's text names hosts and ports: for operators only.
      if (state.now - state.queuedAt >= policy.maxQueueAgeMs) return failWith(finalCode(failure));
      return { retry: true };
    case "aborted":
      return { retry: true };
  }
}
