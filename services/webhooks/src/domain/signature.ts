import { createHmac, randomBytes } from "node:crypto";

// Standard Webhooks (standardwebhooks.com): the secret is `whsec_` and the
// base64 of random bytes; the signature is `v1,` and the base64 HMAC-SHA256,
// keyed with the secret's decoded bytes, of `<webhook-id>.<webhook-timestamp>.<body>`.
// Several signatures go space-separated in one header, which is how a
// rotated secret keeps verifying beside the new one.

export const SECRET_PREFIX = "whsec_";
/** Random bytes in a new secret (the specification asks for 24 to 64). */
const SECRET_BYTES = 32;

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

/** The key bytes of a `whsec_…` secret. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
}

/** The `webhook-signature` header: one `v1,<base64>` per key, space-separated. */
export function signatureHeader(keys: readonly Buffer[], webhookId: string, timestampSeconds: number, body: string): string {
  return keys.map((key) => `v1,${createHmac("sha256", key).update(`${webhookId}.${timestampSeconds}.${body}`).digest("base64")}`).join(" ");
}
