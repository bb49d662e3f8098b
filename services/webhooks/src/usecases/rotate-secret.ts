import { seal } from "@emailsvc/tokens";
import { newSecret } from "../domain/signature.js";
import { loadEndpoint, SECRET_PURPOSE, webhookView, type Deps, type Scope, type WebhookView } from "./deps.js";

/**
 * A new secret, answered once. The one it replaces keeps signing beside it
 * (a second `v1,` signature) for `secretOverlapMs` (24 h), so the integrator
 * can switch their verifier without missing a message. The write is guarded
 * by the secret it replaces: of two rotations at once one wins, the other
 * answers the state it lost to without a secret being lost unseen.
 */
export async function rotateSecret(deps: Deps, scope: Scope, id: string): Promise<{ webhook: WebhookView; secret: string }> {
  const current = await loadEndpoint(scope, id);
  const secret = newSecret();
  const now = deps.now();
  const updated = await scope.endpoints.updateOne(
    { _id: id, secret_sealed: current.secret_sealed },
    {
      $set: {
        secret_sealed: seal(deps.sealingKeys, SECRET_PURPOSE, secret),
        previous_secret_sealed: current.secret_sealed,
        previous_secret_expires_at: now + deps.secretOverlapMs,
        updated_at: now,
      },
    },
  );
  if (!updated) return rotateSecret(deps, scope, id);
  return { webhook: webhookView(updated, now), secret };
}
