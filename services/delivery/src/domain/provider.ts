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
 *   or it cannot be made (template gone or not renderable): the email fails at
 *   once, no retry.
 * - `transient`: the server answered, but not now (SMTP 4xx, a reply timeout):
 *   retried, and counted toward the attempt cap.
 * - `unreachable`: no server to talk to (connection refused or lost, DNS,
 *   connect/greeting timeout, 421), or a service of the platform did not
 *   answer: retried without counting toward the attempt cap, since the message
 *   itself is not the problem; bounded by the queue lifetime instead.
 * - `aborted`: stopped by us (shutdown, the attempt deadline, a lost lease);
 *   the outcome is unknown, the lease decides what happens next.
 */
export type FailureKind = "permanent" | "transient" | "unreachable" | "aborted";

/**
 * Why an email failed, as the API shows it (`error`): a small, stable set of
 * codes integrators can branch on. A relay's refusal adds the relay's reply
 * (`recipient_rejected: 550 5.1.1 <recipient>: User unknown`), without any
 * address. Nothing else reaches the API: the internal detail (an exception's
 * message, a socket error, the relay's host) goes to `last_error` (operators
 * only) and to the logs. services/delivery/README.md lists the codes.
 */
export const PUBLIC_ERRORS = {
  /** The relay refused the recipient for good (5xx to RCPT TO); its reply follows. */
  recipient_rejected: "the relay refused the recipient",
  /** The relay refused the message for good (5xx to MAIL FROM or DATA); its reply follows. */
  message_rejected: "the relay refused the message",
  /** The relay answered "not now" (4xx) or not in time, as often as the retry policy allows; its last reply follows, if any. */
  retries_exhausted: "the relay did not take the message after every retry",
  /** No relay could be reached (refused, timed out, closed, 421, credentials refused) for the queue lifetime. */
  provider_unreachable: "no relay could be reached for the queue lifetime",
  /** A service of the platform (templates, subscribers) did not answer for the queue lifetime. */
  platform_unavailable: "the platform could not prepare the message for the queue lifetime",
  /** The template version the email was queued with no longer exists. */
  template_missing: "the template version of the email no longer exists",
  /** The template could not be compiled or rendered with the email's variables. */
  template_render_failed: "the template could not be rendered",
  /** The recipient's subscriber was erased while the email was queued. */
  recipient_erased: "the recipient was erased before the email was sent",
} as const;

export type PublicErrorCode = keyof typeof PUBLIC_ERRORS;

/** The text of `error`: the code, and the relay's reply when there is one. */
export function publicError(code: PublicErrorCode, reply?: string): string {
  return reply ? `${code}: ${reply}` : code;
}

export class SendFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    /** What the API shows when this failure fails the email. */
    readonly code: PublicErrorCode,
    /** For operators (`last_error`, logs): never shown by the API; holds no recipient address. */
    readonly detail: string,
    /** The relay's reply, addresses removed (scrubReason), when the relay answered. */
    readonly reply?: string,
  ) {
    super(detail);
    this.name = "SendFailure";
  }

  /** `error` as the API shows it. */
  get publicText(): string {
    return publicError(this.code, this.reply);
  }
}

export interface RetryPolicy {
  /** Attempts after which a transient failure fails the email. */
  maxAttempts: number;
  /** How long an email may wait for an unreachable provider before it fails. */
  maxQueueAgeMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 8, maxQueueAgeMs: 24 * 60 * 60 * 1000 };

/** Retry, or fail the email with `error` (the public text; the failure's detail goes to `last_error`). */
export type Outcome = { retry: true } | { retry: false; error: string };

/**
 * What to do after a failed attempt. `transientFailures` counts the attempts
 * the server answered "not now" to, this one included when it is one.
 */
export function afterFailure(
  failure: SendFailure,
  state: { transientFailures: number; queuedAt: number; now: number },
  policy: RetryPolicy,
): Outcome {
  switch (failure.kind) {
    case "permanent":
      return { retry: false, error: failure.publicText };
    case "transient":
      if (state.transientFailures >= policy.maxAttempts) return { retry: false, error: publicError("retries_exhausted", failure.reply) };
      return { retry: true };
    case "unreachable":
      if (state.now - state.queuedAt >= policy.maxQueueAgeMs) return { retry: false, error: publicError(failure.code) };
      return { retry: true };
    case "aborted":
      return { retry: true };
  }
}
