import { invalid } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { DuplicateKeyError } from "@emailsvc/storage";
import { emailKey, validateEmail } from "../domain/subscriber.js";
import { suppressionHashes, type SuppressionReason } from "../domain/suppression.js";
import type { SuppressionDoc } from "../storage/documents.js";
import { suppressionOf, type Deps, type Scope } from "./deps.js";
import { suppressionView, type SuppressionView } from "./list-suppressions.js";

/**
 * Adds an address to the suppression list by hand (POST /suppressions): only
 * reason `manual` (bounces and complaints come from delivery, erasures from
 * the erasure). Idempotent: an address on the list already keeps its entry
 * (`created: false`). Audited in the trail of the address's subscriber, if
 * it has one, by ids and reasons only.
 */
export async function addSuppression(deps: Deps, scope: Scope, input: { email: unknown; reason: SuppressionReason | undefined }): Promise<{ suppression: SuppressionView; created: boolean }> {
  const email = validateEmail(input.email);
  if (input.reason !== "manual") {
    throw invalid("only reason manual may be added by hand", [{ field: "reason", description: "must be manual (bounces, complaints and erasures are added by the platform)" }]);
  }
  const key = emailKey(email);
  const existing = await suppressionOf(deps, scope, key);
  if (existing) return { suppression: suppressionView(existing), created: false };
  const [marker] = suppressionHashes(deps.suppressionKeys, scope.suppressions.tenant, key);
  const now = deps.now();
  const doc: Omit<SuppressionDoc, "tenant"> = { _id: marker!.hash, key_id: marker!.keyId, created_at: now, email, reason: "manual", source: "api" };
  try {
    await scope.suppressions.insertOne(doc);
  } catch (err) {
    if (err instanceof DuplicateKeyError) {
      const winner = await suppressionOf(deps, scope, key);
      if (winner) return { suppression: suppressionView(winner), created: false };
    }
    throw err;
  }
  await auditSuppression(deps, scope, key, "suppression.added", { reason: "manual" });
  return { suppression: suppressionView({ ...doc, tenant: scope.suppressions.tenant } as SuppressionDoc), created: true };
}

/**
 * An audit record of a change to the list, in the trail of the address's
 * subscriber when there is one ("" otherwise): who, when, how, and reasons;
 * never the address.
 */
export async function auditSuppression(deps: Deps, scope: Scope, key: string, type: string, data: Record<string, unknown>): Promise<void> {
  const subscriber = await scope.subscribers.findOne({ email_key: key, deleted: false });
  const how = scope.origin;
  await scope.audit.insertOne({
    _id: newId("evt"),
    subscriber_id: subscriber?._id ?? "",
    type,
    occurred_at: deps.now(),
    actor: scope.call.actor,
    source: how?.source ?? "",
    ip: how?.ip ?? "",
    user_agent: how?.userAgent ?? "",
    data,
  });
}
