import { createHmac, timingSafeEqual } from "node:crypto";
import type { KeyRing } from "@emailsvc/tokens";
import { RETURN_PATH_LABEL } from "./sender-domain.js";

// The return path (envelope MAIL FROM) of each message names its email
// (VERP): `b+<email id>.<signature>@<bounce host>`. A bounce or a complaint
// that a receiving server sends to it then says which email it is about,
// without parsing the original message (which many reports leave out or
// truncate), and the signature (HMAC-SHA256 with a key of the
// TOKEN_SIGNING_KEYS ring over a purpose prefix, so it never equals a token's;
// 64 bits) means a forged or guessed address is dropped rather than bouncing
// someone else's mail. The local part stays
// lower case and under RFC 5321's 64 characters, since some relays fold case
// and cut long local parts.
//
// The bounce host is `bounces.<From domain>` when the From is a verified
// sending domain (its return-path CNAME points at RETURN_PATH_HOST): the
// return path is then aligned with the From for SPF under DMARC. Otherwise it
// is RETURN_PATH_HOST itself.

const PREFIX = "b+";
const SIGNATURE_HEX = 16;
const EMAIL_ID = /^eml_[0-9a-z]{26}$/;

function signature(secret: Buffer, emailId: string): string {
  return createHmac("sha256", secret).update(`emailsvc return-path\0${emailId}`).digest("hex").slice(0, SIGNATURE_HEX);
}

/** The host a message's return path is at: aligned with a verified sending domain, else the platform's. */
export function bounceHostFor(fromDomain: string | undefined, returnPathHost: string): string {
  return fromDomain ? `${RETURN_PATH_LABEL}.${fromDomain.toLowerCase()}` : returnPathHost.toLowerCase();
}

/** The return path of one email, signed with the ring's current key. */
export function returnPathFor(ring: KeyRing, emailId: string, bounceHost: string): string {
  if (!EMAIL_ID.test(emailId)) throw new RangeError("a return path names an email id (eml_…)");
  return `${PREFIX}${emailId}.${signature(ring.current.secret, emailId)}@${bounceHost}`;
}

/**
 * The email a return path names, when its signature is one of the ring's
 * keys' (any: mail signed before a rotation still bounces home); null for
 * any other address, which the receiver refuses.
 */
export function emailIdOfReturnPath(ring: KeyRing, address: string): string | null {
  const at = address.lastIndexOf("@");
  if (at <= 0) return null;
  const local = address.slice(0, at).toLowerCase();
  if (!local.startsWith(PREFIX)) return null;
  const dot = local.lastIndexOf(".");
  if (dot < 0) return null;
  const emailId = local.slice(PREFIX.length, dot);
  const given = local.slice(dot + 1);
  if (!EMAIL_ID.test(emailId) || !/^[0-9a-f]+$/.test(given) || given.length !== SIGNATURE_HEX) return null;
  const givenBytes = Buffer.from(given, "hex");
  for (const key of ring.keys) {
    if (timingSafeEqual(givenBytes, Buffer.from(signature(key.secret, emailId), "hex"))) return emailId;
  }
  return null;
}
