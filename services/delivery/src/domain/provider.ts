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
 * - `permanent`: the receiving side refused this message for good (SMTP 5xx):
 *   the email fails with the reason, no retry.
 * - `transient`: the server answered, but not now (SMTP 4xx, a reply timeout):
 *   retried, and counted toward the attempt cap.
 * - `unreachable`: no server to talk to (connection refused or lost, DNS,
 *   connect/greeting timeout, 421): retried without counting toward the
 *   attempt cap, since the message itself is not the problem; bounded by the
 *   queue lifetime instead.
 * - `aborted`: stopped by us (shutdown or the attempt deadline); the outcome
 *   is unknown, the lease decides what happens next.
 */
export type FailureKind = "permanent" | "transient" | "unreachable" | "aborted";

export class SendFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    /** Safe to store and show: no recipient address (see scrubReason). */
    readonly reason: string,
  ) {
    super(reason);
    this.name = "SendFailure";
  }
}

export interface RetryPolicy {
  /** Attempts after which a transient failure fails the email. */
  maxAttempts: number;
  /** How long an email may wait for an unreachable provider before it fails. */
  maxQueueAgeMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 8, maxQueueAgeMs: 24 * 60 * 60 * 1000 };

export type Outcome = { retry: true } | { retry: false; reason: string };

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
      return { retry: false, reason: failure.reason };
    case "transient":
      if (state.transientFailures >= policy.maxAttempts) {
        return { retry: false, reason: `gave up after ${state.attempts} attempts: ${failure.reason}` };
      }
      return { retry: true };
    case "unreachable":
      if (state.now - state.queuedAt >= policy.maxQueueAgeMs) {
        return { retry: false, reason: `gave up after ${state.attempts} attempts: ${failure.reason}` };
      }
      return { retry: true };
    case "aborted":
      return { retry: true };
  }
}
