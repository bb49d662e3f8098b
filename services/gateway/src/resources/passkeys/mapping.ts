import type { Passkey } from "../../members/passkeys.js";

export const passkeyJson = (passkey: Passkey) => ({ id: passkey.id, name: passkey.name, created_at: passkey.createdAt, last_used_at: passkey.lastUsedAt });
