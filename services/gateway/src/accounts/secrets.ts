import { createHash, randomInt, timingSafeEqual } from "node:crypto";
import type { KeyMode } from "@emailsvc/tenancy";

// API keys and the admin token are long random secrets. Their entropy (about
// 238 bits for 40 base62 characters) makes a slow password hash pointless: a
// SHA-256 is stored, looked up by equality, and cannot be reversed or guessed.

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const SECRET_LENGTH = 40;
const KEY_SHAPE = /^sk_(live|test)_[0-9A-Za-z]{32,128}$/;

/** `length` characters of base62 from the CSPRNG, without modulo bias (randomInt rejects). */
export function randomBase62(length = SECRET_LENGTH): string {
  let out = "";
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** A new API key, e.g. `sk_test_<40 base62>`. */
export function newApiKey(mode: KeyMode): string {
  return `sk_${mode}_${randomBase62()}`;
}

/** Cheap shape check before any lookup: garbage never reaches the store. */
export function parseApiKey(value: string): { mode: KeyMode } | undefined {
  const match = KEY_SHAPE.exec(value);
  return match ? { mode: match[1] as KeyMode } : undefined;
}

/** `sk_test_…abcd`: enough to recognise a key in a list, useless to an attacker. */
export function maskApiKey(mode: KeyMode, last4: string): string {
  return `sk_${mode}_…${last4}`;
}

/** A new operator token for development set-ups. */
export function newAdminToken(): string {
  return `adm_${randomBase62()}`;
}

/**
 * Compares a presented secret with a stored SHA-256 (hex) in constant time:
 * hashing first gives both sides one length, so neither the content nor the
 * length of the expected secret leaks through timing.
 */
export function secretMatchesHash(presented: string, expectedHashHex: string): boolean {
  const presentedHash = createHash("sha256").update(presented, "utf8").digest();
  const expected = Buffer.from(expectedHashHex, "hex");
  return expected.length === presentedHash.length && timingSafeEqual(presentedHash, expected);
}
