import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { KeyRing, SigningKey } from "./keys.js";

// Secrets the platform must read back to use (a sending domain's DKIM private
// key, a webhook endpoint's signing secret) cannot be hashed like API keys;
// they are sealed at rest with a key ring from the environment
// (`SEALING_KEYS`, read like TOKEN_SIGNING_KEYS by loadKeyRing), so a dump of
// the database alone reveals none of them. AES-256-GCM with a key derived per
// ring key and per purpose (HKDF-SHA256; the purpose is also the additional
// data), so a value sealed for one purpose does not open as another's, and the
// ring's raw bytes are never a cipher key themselves. Rotation: put a new key
// first (it seals), keep the old ones after it (they open) until every value
// was sealed again.

const VERSION = "s1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SealedValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SealedValueError";
  }
}

/** What a sealed value is for, e.g. `dkim-private-key`: a value sealed for one purpose never opens for another. */
export type SealPurpose = string;

function cipherKey(key: SigningKey, purpose: SealPurpose): Buffer {
  return Buffer.from(hkdfSync("sha256", key.secret, Buffer.alloc(0), `emailsvc sealed ${purpose}`, 32));
}

/**
 * Seals `plaintext` with the ring's current key: `s1.<kid>.<iv>.<ciphertext+tag>`
 * (base64url parts), safe to store and to log the shape of, never the value.
 */
export function seal(ring: KeyRing, purpose: SealPurpose, plaintext: string | Buffer): string {
  const key = ring.current;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", cipherKey(key, purpose), iv);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(typeof plaintext === "string" ? Buffer.from(plaintext, "utf8") : plaintext), cipher.final(), cipher.getAuthTag()]);
  return [VERSION, key.id, iv.toString("base64url"), body.toString("base64url")].join(".");
}

/**
 * Opens a value `seal` made for `purpose`, with whichever key of the ring
 * sealed it. Throws SealedValueError (never naming the value) when the key is
 * no longer in the ring, the value was altered, or it was sealed for another
 * purpose.
 */
export function openSealed(ring: KeyRing, purpose: SealPurpose, sealed: string): Buffer {
  const parts = sealed.split(".");
  if (parts.length !== 4 || parts[0] !== VERSION) throw new SealedValueError("not a sealed value");
  const [, kid, ivText, bodyText] = parts as [string, string, string, string];
  const key = ring.find(kid);
  if (!key) throw new SealedValueError(`sealed with key "${kid}", which the ring no longer holds`);
  const iv = Buffer.from(ivText, "base64url");
  const body = Buffer.from(bodyText, "base64url");
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SealedValueError("not a sealed value");
  const decipher = createDecipheriv("aes-256-gcm", cipherKey(key, purpose), iv);
  decipher.setAAD(Buffer.from(purpose));
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new SealedValueError(`a value sealed with key "${kid}" does not open for ${purpose}: altered, or sealed for another purpose`);
  }
}

/** Whether a sealed value was sealed with another key than the ring's current one (it is due to be sealed again). */
export function sealedWithOldKey(ring: KeyRing, sealed: string): boolean {
  return sealed.split(".")[1] !== ring.current.id;
}
