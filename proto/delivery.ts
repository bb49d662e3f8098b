// Delivery's contracts under one name (`delivery.*`): DeliveryService and its failure reasons.
import { FailureReason } from "./gen/emailsvc/delivery/v1/failure_reason_pb.js";

export * from "./gen/emailsvc/delivery/v1/delivery_pb.js";
export * from "./gen/emailsvc/delivery/v1/failure_reason_pb.js";
export * from "./gen/emailsvc/delivery/v1/sender_domains_pb.js";

/**
 * Each failure reason as text: the code the REST API shows at the start of an
 * email's `error` and campaigns keeps on a skipped or failed fire (the value's
 * name without its prefix, lower-cased). The one table between the enum and
 * its text, in both directions: nobody derives one from the other by editing
 * strings. A value missing here does not compile.
 */
export const FAILURE_REASON_CODES = {
  [FailureReason.TEMPLATE_UNAVAILABLE]: "template_unavailable",
  [FailureReason.TEMPLATE_RENDER_FAILED]: "template_render_failed",
  [FailureReason.RECIPIENT_REJECTED]: "recipient_rejected",
  [FailureReason.MESSAGE_REJECTED]: "message_rejected",
  [FailureReason.ATTEMPTS_EXHAUSTED]: "attempts_exhausted",
  [FailureReason.RELAY_UNAVAILABLE]: "relay_unavailable",
  [FailureReason.SERVICE_UNAVAILABLE]: "service_unavailable",
  [FailureReason.RECIPIENT_UNSUBSCRIBED]: "recipient_unsubscribed",
  [FailureReason.RECIPIENT_BOUNCED]: "recipient_bounced",
  [FailureReason.RECIPIENT_COMPLAINED]: "recipient_complained",
  [FailureReason.RECIPIENT_SUPPRESSED]: "recipient_suppressed",
  [FailureReason.RECIPIENT_ERASED]: "recipient_erased",
  [FailureReason.CAMPAIGN_CANCELLED]: "campaign_cancelled",
  [FailureReason.FROM_DOMAIN_NOT_VERIFIED]: "from_domain_not_verified",
} as const satisfies Record<Exclude<FailureReason, FailureReason.UNSPECIFIED>, string>;

/** A failure reason's code, e.g. `recipient_unsubscribed`. */
export type FailureReasonCode = (typeof FAILURE_REASON_CODES)[keyof typeof FAILURE_REASON_CODES];

const BY_CODE = new Map<string, FailureReason>(
  Object.entries(FAILURE_REASON_CODES).map(([value, code]) => [code, Number(value) as FailureReason]),
);

/** The code of a reason; undefined for UNSPECIFIED (or a value this build does not know). */
export function failureReasonCode(reason: FailureReason): FailureReasonCode | undefined {
  return reason === FailureReason.UNSPECIFIED ? undefined : (FAILURE_REASON_CODES as Partial<Record<FailureReason, FailureReasonCode>>)[reason];
}

/** The reason of a code; UNSPECIFIED for none, or a text that is no code. */
export function failureReasonOfCode(code: string | undefined): FailureReason {
  return (code !== undefined && BY_CODE.get(code)) || FailureReason.UNSPECIFIED;
}
