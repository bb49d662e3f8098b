import { notFound } from "@emailsvc/errors";
import { emailKey, validateEmail } from "../domain/subscriber.js";
import { isErasureMarker, reasonOf, validateRemovalReason } from "../domain/suppression.js";
import { auditSuppression } from "./add-suppression.js";
import { markersOf, type Deps, type Scope } from "./deps.js";
import { suppressionView, type SuppressionView } from "./list-suppressions.js";

/**
 * Removes an address from the suppression list (DELETE /suppressions/{email})
 * with a reason, audited (the removed entry's reason and the reason given).
 * 404 when the address is not on the list. An erased person's entry holds no
 * address and is not found by one here: it goes only when the person opts in
 * again (a create with `resubscribe`). The subscriber's own status (bounced,
 * complained) is not changed: that is an update of the subscriber.
 */
export async function removeSuppression(deps: Deps, scope: Scope, input: { email: unknown; reason: unknown }): Promise<SuppressionView> {
  const key = emailKey(validateEmail(input.email));
  const reason = validateRemovalReason(input.reason);
  const entries = (await scope.suppressions.find({ _id: { $in: markersOf(deps, scope, key) } })).filter((entry) => !isErasureMarker(entry));
  if (entries.length === 0) throw notFound("suppression");
  await scope.suppressions.deleteMany({ _id: { $in: entries.map((entry) => entry._id) } });
  await auditSuppression(deps, scope, key, "suppression.removed", { suppression_reason: reasonOf(entries[0]!), reason });
  return suppressionView(entries[0]!);
}
