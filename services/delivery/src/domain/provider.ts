import type { delivery } from "@emailsvc/proto";
import type { OutgoingMessage } from "./message.js";
import type { Bounce, BounceType, ProviderName } from "./email.js";

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
 * - `permanent`: the receiving side refused this message for good (SMTP 5xx:
 *   a hard bounce), it cannot be built (template gone, render error: failed),
 *   or the recipient may not get it (suppressed): no retry.
 * - `transient`: the server answered, but not now (SMTP 4xx, a reply timeout):
 *   deferred and retried with backoff; a soft bounce once the window ends.
 * - `unreachable`: no server to talk to (connection refused or lost, DNS,
 *   connect/greeting timeout, 421, the templates or subscribers service down):
 *   deferred and retried like a "not now", but failed (not bounced) once the
 *   window ends, since the recipient's address is not in question.
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
  /** The relay answered "try later" until the retry window ended (a soft bounce). */
  attempts_exhausted: "the relay kept answering 'try later' until the retry window ended",
  /** No relay could be reached (or accepted our credentials) within the retry window. */
  relay_unavailable: "the relay could not be reached within the retry window",
  /** The templates or subscribers service could not be reached within the retry window. */
  service_unavailable: "a service the send needs could not be reached within the retry window",
  /** Marketing mail (a marketing template, or a campaign) whose recipient's subscriber unsubscribed. */
  recipient_unsubscribed: "the recipient unsubscribed: marketing mail is not sent to them",
  /** Any mail to a subscriber whose address bounced. */
  recipient_bounced: "the recipient's address bounced: no mail is sent to it",
  /** Any mail to a subscriber who complained about our mail. */
  recipient_complained: "the recipient complained about our mail: no mail is sent to them",
  /** Mail to an address on the account's suppression list (erased, unsubscribed or added by hand) that this mail may not reach. */
  recipient_suppressed: "the address is on the account's suppression list: this mail is not sent to it",
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
  /** Wait before the first retry of a deferred email (ms); doubled after each further deferral. */
  backoffMs: number;
  /** The longest wait between two attempts (ms). */
  maxBackoffMs: number;
  /**
   * How long after it was queued an email is still tried (ms,
   * DELIVERY_RETRY_HOURS): then a "not now" bounces it soft, and an
   * unreachable relay or service fails it.
   */
  windowMs: number;
}

/** 1 minute, doubling, at most an hour apart, for 72 hours (what receiving MTAs expect of a sender). */
export const DEFAULT_RETRY: RetryPolicy = { backoffMs: 60_000, maxBackoffMs: 3_600_000, windowMs: 72 * 3_600_000 };

/** The refusals of the recipient (the subscribers service's answer): the email is `suppressed`, not failed. */
const SUPPRESSION_CODES = new Set<FailureCode>(["recipient_unsubscribed", "recipient_bounced", "recipient_complained", "recipient_suppressed"]);

/**
 * A refusal for good of the recipient by the relay (a 5xx at RCPT): a hard
 * bounce, which suppresses the address. A refusal of the message (a 5xx at
 * MAIL FROM or DATA: content, policy, the sender; an HTTP provider's
 * MessageRejected) is about the message, not the address: the email fails
 * (`message_rejected`) and the recipient stays mailable, as Postmark and SES
 * treat content and policy rejections.
 */
const HARD_BOUNCE_CODES = new Set<FailureCode>(["recipient_rejected"]);

/**
 * What happens to the email after a failed attempt:
 * - `retry`: nothing is written, as after a crash (the attempt was cut off);
 *   the lease decides who tries next;
 * - `defer`: status `deferred` until `nextAttemptAt`, when the sweep hands it
 *   back to the consumer;
 * - `settle`: a final status, with the reason (its code), the `error` text
 *   (the code and the relay's reply) and, for a bounce, its type.
 */
export type Outcome =
  | { kind: "retry" }
  | { kind: "defer"; nextAttemptAt: number; reply: string }
  | { kind: "settle"; status: "bounced" | "failed" | "suppressed"; reason: PublicErrorCode; error: string; bounce?: Bounce };

function settleWith(status: "bounced" | "failed" | "suppressed", reason: PublicErrorCode, reply = "", bounceType?: BounceType): Outcome {
  const error = publicError(reason, reply);
  return { kind: "settle", status, reason, error, ...(bounceType ? { bounce: { type: bounceType, diagnostic: reply || reason } } : {}) };
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

/** The wait before the next attempt, after `attempts` attempts: backoff doubled per attempt beyond the first, capped. */
export function backoffAfter(attempts: number, policy: Pick<RetryPolicy, "backoffMs" | "maxBackoffMs">): number {
  const doublings = Math.min(Math.max(attempts - 1, 0), 30);
  return Math.min(policy.backoffMs * 2 ** doublings, policy.maxBackoffMs);
}

/**
 * What to do after a failed attempt. `attempts` counts every attempt made so
 * far including this one. A "not now" (transient) retried past the window
 * bounces soft; an unreachable relay or service fails (`relay_unavailable`,
 * `service_unavailable`): the recipient's address is not in question, so the
 * subscriber is not moved. The last attempt comes at the window's end.
 */
export function afterFailure(failure: SendFailure, state: { attempts: number; queuedAt: number; now: number }, policy: RetryPolicy): Outcome {
  switch (failure.kind) {
    case "permanent":
      if (SUPPRESSION_CODES.has(failure.code)) return settleWith("suppressed", finalCode(failure));
      if (HARD_BOUNCE_CODES.has(failure.code)) return settleWith("bounced", finalCode(failure), failure.reply, "hard");
      return settleWith("failed", finalCode(failure), failure.reply);
    case "transient":
    case "unreachable": {
      const windowEnd = state.queuedAt + policy.windowMs;
      if (state.now >= windowEnd) {
        // A connection error's text names hosts and ports: for operators only.
        return failure.kind === "transient" ? settleWith("bounced", "attempts_exhausted", failure.reply, "soft") : settleWith("failed", finalCode(failure));
      }
      return { kind: "defer", nextAttemptAt: Math.min(state.now + backoffAfter(state.attempts, policy), windowEnd), reply: failure.reply };
    }
    case "aborted":
      return { kind: "retry" };
  }
}
