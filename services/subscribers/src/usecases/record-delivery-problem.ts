import { isId } from "@emailsvc/ids";
import { invalid } from "@emailsvc/errors";
import { DuplicateKeyError } from "@emailsvc/storage";
import { emailKey, validateEmail, type Status } from "../domain/subscriber.js";
import { reasonOf, strongerReason, suppressionHashes, type SuppressionReason } from "../domain/suppression.js";
import { auditSuppression } from "./add-suppression.js";
import { suppressionOf, type Deps, type Scope } from "./deps.js";
import { updateSubscriber } from "./update-subscriber.js";

/** What delivery learnt about an address from one email. */
export type DeliveryProblem = "hard_bounce" | "soft_bounce" | "complaint";

/** Soft bounces (retries that ran out) of one address within `windowMs` that suppress it as a hard bounce would. */
export interface SoftBouncePolicy {
  limit: number;
  windowMs: number;
}

/** 3 in 30 days (SOFT_BOUNCE_LIMIT, SOFT_BOUNCE_WINDOW_DAYS). */
export const DEFAULT_SOFT_BOUNCES: SoftBouncePolicy = { limit: 3, windowMs: 30 * 24 * 3_600_000 };

/** The subscriber status each suppressing problem moves an address's subscriber to. */
const MOVE: Record<"hard_bounce" | "complaint", Status> = { hard_bounce: "bounced", complaint: "complained" };

/**
 * Delivery's report of a bounce or a complaint (SuppressionService.RecordDeliveryProblem,
 * called from delivery's outbox, so it comes at least once): a hard bounce or
 * a complaint, or the `limit`-th soft bounce within the window, puts the
 * address on the suppression list (`hard_bounce`, `complaint`; a stronger
 * reason replaces a weaker one) and moves its subscriber, if any, to
 * `bounced` or `complained` (an ordinary status change: audited,
 * `subscriber.status_changed`). Idempotent: a soft bounce counts once per
 * email, the entry is keyed by the address, the move is guarded by the
 * status. A subscriber already complained stays so on a bounce.
 */
export async function recordDeliveryProblem(
  deps: Deps & { softBounces?: SoftBouncePolicy },
  scope: Scope,
  input: { email: unknown; problem: DeliveryProblem | undefined; emailId: string },
): Promise<{ suppressed: boolean; subscriberId: string }> {
  const email = validateEmail(input.email);
  if (!input.problem) throw invalid("problem is required", [{ field: "problem", description: "hard_bounce, soft_bounce or complaint" }]);
  if (!isId("eml", input.emailId)) throw invalid("email_id is invalid", [{ field: "email_id", description: "an email id" }]);
  const key = emailKey(email);
  const [marker] = suppressionHashes(deps.suppressionKeys, scope.suppressions.tenant, key);
  const now = deps.now();

  let reason: "hard_bounce" | "complaint";
  if (input.problem === "soft_bounce") {
    const policy = deps.softBounces ?? DEFAULT_SOFT_BOUNCES;
    try {
      await scope.softBounces.insertOne({ _id: input.emailId, marker: marker!.hash, at: now });
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const since = now - policy.windowMs;
    await scope.softBounces.deleteMany({ marker: marker!.hash, at: { $lt: since } });
    const recent = await scope.softBounces.count({ marker: marker!.hash, at: { $gte: since } });
    if (recent < policy.limit) return { suppressed: false, subscriberId: "" };
    reason = "hard_bounce";
  } else {
    reason = input.problem;
  }

  await suppress(deps, scope, key, email, reason, input.emailId, marker!);
  const subscriber = await scope.subscribers.findOne({ email_key: key, deleted: false });
  if (!subscriber) return { suppressed: true, subscriberId: "" };
  const to = MOVE[reason];
  // complained is the stronger verdict: a later bounce leaves it.
  if (subscriber.status !== to && subscriber.status !== "complained") {
    await updateSubscriber(deps, scope, { id: subscriber._id, email: undefined, status: to, metadata: undefined });
  }
  return { suppressed: true, subscriberId: subscriber._id };
}

/** Puts the address on the list with `reason`, or strengthens the reason of its entry. */
async function suppress(
  deps: Deps,
  scope: Scope,
  key: string,
  email: string,
  reason: SuppressionReason,
  emailId: string,
  marker: { hash: string; keyId: string },
): Promise<void> {
  const existing = await suppressionOf(deps, scope, key);
  if (existing) {
    const stronger = strongerReason(reasonOf(existing), reason);
    if (stronger !== reasonOf(existing)) {
      await scope.suppressions.updateOne({ _id: existing._id }, { $set: { reason: stronger, source: "delivery", email_id: emailId } });
      await auditSuppression(deps, scope, key, "suppression.added", { reason: stronger, email_id: emailId });
    }
    return;
  }
  try {
    await scope.suppressions.insertOne({ _id: marker.hash, key_id: marker.keyId, created_at: deps.now(), email, reason, source: "delivery", email_id: emailId });
  } catch (err) {
    if (err instanceof DuplicateKeyError) return; // a repeated report, or a concurrent one: the entry is there
    throw err;
  }
  await auditSuppression(deps, scope, key, "suppression.added", { reason, email_id: emailId });
}
