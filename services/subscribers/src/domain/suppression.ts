import { createHmac } from "node:crypto";
import type { KeyRing } from "@emailsvc/tokens";
import { AppError, invalid } from "@emailsvc/errors";
import { hasVisibleText, trimInvisible, visibleTextRule } from "@emailsvc/text";

// The account's suppression list (one per account and mode). Each entry is
// keyed by a hash of its address (below) and says why: a hard bounce or a
// complaint (delivery's reports), an unsubscribe, added by hand, or erased.
// What each reason blocks is in mailability.ts.
//
// Suppression of erased addresses. Erasure keeps nothing of a subscriber but
// a keyed hash of their address: HMAC-SHA256 under a key from the environment
// (SUPPRESSION_KEYS) of the tenant and the lower-cased address, so the marker
// cannot be reversed or matched against a list of addresses without the key,
// and the same address in two tenants gives two unrelated markers. A create
// (or an import) of a suppressed address is refused unless the integrator
// says the person opted in again. Pure rules, no I/O.

/** Why an address is on the list. */
export const SUPPRESSION_REASONS = ["hard_bounce", "complaint", "unsubscribed", "manual", "erased"] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** The reason of a stored entry: entries written before reasons existed are erasure markers. */
export function reasonOf(doc: { reason?: SuppressionReason }): SuppressionReason {
  return doc.reason ?? "erased";
}

/**
 * Whether an entry is an erased person's: no address kept. Only these refuse
 * a create of the address (409 subscriber_suppressed) and go when the person
 * opts in again; the others stop mail, not the subscriber record.
 */
export function isErasureMarker(doc: { email?: string }): boolean {
  return !doc.email;
}

/**
 * Which reason wins when an address is suppressed again: a complaint over a
 * hard bounce over an unsubscribe or a manual entry (the stronger keeps more
 * mail away). An erased entry keeps its own.
 */
const STRENGTH: Record<SuppressionReason, number> = { manual: 0, unsubscribed: 0, hard_bounce: 1, complaint: 2, erased: 3 };
export function strongerReason(current: SuppressionReason, next: SuppressionReason): SuppressionReason {
  return STRENGTH[next] > STRENGTH[current] ? next : current;
}

/** Longest reason given for removing an address from the list. */
export const REMOVAL_REASON_MAX = 500;

/** The reason a removal must give (1-500 characters of visible text, no control characters). */
export function validateRemovalReason(raw: unknown): string {
  const reason = trimInvisible(typeof raw === "string" ? raw : "");
  const field = "reason";
  if (!hasVisibleText(reason)) throw invalid("a reason is required to remove an address from the suppression list", [{ field, description: visibleTextRule(REMOVAL_REASON_MAX) }]);
  // eslint-disable-next-line no-control-regex
  if (reason.length > REMOVAL_REASON_MAX || /[\u0000-\u001f\u007f]/.test(reason)) {
    throw invalid("reason is too long or holds control characters", [{ field, description: visibleTextRule(REMOVAL_REASON_MAX) }]);
  }
  return reason;
}

/** The marker of an address under one key. */
export interface SuppressionHash {
  keyId: string;
  hash: string;
}

/**
 * The markers an address may have in a tenant: one per key of the ring (the
 * first key writes new ones, every key listed still finds old ones, so a key
 * can be rotated: put the new one first and keep the old one listed).
 */
export function suppressionHashes(ring: KeyRing, tenant: string, emailKey: string): SuppressionHash[] {
  return ring.keys.map((key) => ({
    keyId: key.id,
    hash: createHmac("sha256", key.secret).update(`${tenant}\n${emailKey}`).digest("base64url"),
  }));
}

/** Longest reason for a resubscribe. */
export const RESUBSCRIBE_REASON_MAX = 500;

/**
 * `resubscribe` with its reason as given on create: a reason of 1-500
 * characters without control characters, with visible text, is required with
 * the flag, and refused without it. Invisible characters around it (spaces,
 * U+200B, U+FEFF, U+2060, U+2800, …) are trimmed: a reason of only those says
 * nothing, and would lift a suppression on no grounds. Undefined when the
 * flag is not set.
 */
export function validateResubscribe(resubscribe: boolean, rawReason: string): { reason: string } | undefined {
  const reason = trimInvisible(rawReason);
  if (!resubscribe) {
    if (reason !== "") throw invalid("resubscribe_reason is only taken with resubscribe: true", [{ field: "resubscribe_reason", description: "only with resubscribe: true" }]);
    return undefined;
  }
  if (rawReason === "") throw invalid("resubscribe needs a reason", [{ field: "resubscribe_reason", description: "is required with resubscribe: true" }]);
  if (!hasVisibleText(reason)) {
    throw invalid("resubscribe_reason must say something: it holds no visible text", [
      { field: "resubscribe_reason", description: visibleTextRule(RESUBSCRIBE_REASON_MAX) },
    ]);
  }
  if (reason.length > RESUBSCRIBE_REASON_MAX) {
    throw invalid("resubscribe_reason is too long", [{ field: "resubscribe_reason", description: `at most ${RESUBSCRIBE_REASON_MAX} characters` }]);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(reason)) {
    throw invalid("resubscribe_reason holds control characters", [{ field: "resubscribe_reason", description: visibleTextRule(RESUBSCRIBE_REASON_MAX) }]);
  }
  return { reason };
}

/** 409 `subscriber_suppressed`: the address was erased at its owner's request. */
export function suppressed(): AppError {
  return new AppError(
    "conflict",
    "subscriber_suppressed",
    "this address was erased at its owner's request; create it again only if the person opted in again (resubscribe: true with a resubscribe_reason)",
    { fieldViolations: [{ field: "email", description: "is suppressed after an erasure" }] },
  );
}
