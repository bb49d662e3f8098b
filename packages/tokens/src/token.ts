import { createHmac, timingSafeEqual } from "node:crypto";
import type { KeyRing } from "./keys.js";

// Compact JWS (RFC 7515) tokens, HMAC-SHA256 only. The algorithm is pinned:
// the header's `alg` must be exactly HS256, so `none`, RS256-with-a-public-key
// confusion and the like are refused before any key is touched. A token is
// bound to one purpose (the `aud` claim), one tenant (account and mode) and,
// where it names one, one subscriber and one email. It carries ids only:
// links sit in mailboxes and proxy logs, so no address or metadata goes in.

/** What a token may be used for; a token of one purpose is refused for another. */
export type TokenPurpose = "unsubscribe" | "preferences" | "portal_session" | "confirm";

export interface TokenSubject {
  purpose: TokenPurpose;
  accountId: string;
  mode: "live" | "test";
  /** The subscriber it acts on (`sub`), when known. */
  subscriberId?: string | undefined;
  /** The email the link was minted for (`eml`), when it came in one. */
  emailId?: string | undefined;
  /** The campaign the email belongs to (`cmp`), when it is one's. */
  campaignId?: string | undefined;
}

export interface VerifiedToken extends TokenSubject {
  /** Key id that signed it. */
  keyId: string;
  /** Seconds since the epoch. */
  issuedAt: number;
  expiresAt: number;
}

export type TokenFailure =
  | "malformed"
  | "unsupported_algorithm"
  | "unknown_key"
  | "bad_signature"
  | "expired"
  | "wrong_purpose"
  | "invalid_claims";

/** Why a token was refused. The message is safe to show; it never repeats the token. */
export class TokenError extends Error {
  constructor(readonly reason: TokenFailure) {
    super(MESSAGES[reason]);
    this.name = "TokenError";
  }
}

const MESSAGES: Record<TokenFailure, string> = {
  malformed: "the token is not a well-formed signed token",
  unsupported_algorithm: "the token's algorithm is not accepted",
  unknown_key: "the token was signed with a key that is not (or no longer) accepted",
  bad_signature: "the token's signature does not match",
  expired: "the token has expired",
  wrong_purpose: "the token is not meant for this use",
  invalid_claims: "the token's contents are not valid",
};

const ISSUER = "emailsvc";
const ALGORITHM = "HS256";
/** Longer input is refused before decoding anything. */
const MAX_TOKEN_LENGTH = 2048;
/** Clock difference between replicas tolerated on `iat`. */
const CLOCK_SKEW_SECONDS = 60;
const SEGMENT = /^[A-Za-z0-9_-]+$/;
const ACCOUNT_ID = /^acc_[0-9a-z]{26}$/;
const SUBSCRIBER_ID = /^sub_[0-9a-z]{26}$/;
const EMAIL_ID = /^eml_[0-9a-z]{26}$/;
const CAMPAIGN_ID = /^cmp_[0-9a-z]{26}$/;

export interface SignOptions {
  /** Seconds the token is valid. */
  ttlSeconds: number;
  /** Milliseconds since the epoch; default now. */
  now?: number;
}

/** Signs a token for `subject` with the ring's current key. */
export function signToken(ring: KeyRing, subject: TokenSubject, options: SignOptions): string {
  if (!Number.isInteger(options.ttlSeconds) || options.ttlSeconds < 1) throw new TypeError("ttlSeconds must be a positive integer");
  const key = ring.current;
  const issuedAt = Math.floor((options.now ?? Date.now()) / 1000);
  checkSubject(subject);
  // The claims' JSON written directly, in the order and form JSON.stringify
  // gives them (a test compares): checkSubject let through only ids of
  // letters, digits and "_", which JSON writes as they are. A campaign signs
  // one link per message, and the object, its spreads and the stringify cost
  // more than the HMAC.
  let claims = `{"iss":"${ISSUER}","aud":${JSON.stringify(subject.purpose)},"acc":"${subject.accountId}","mode":"${subject.mode}"`;
  if (subject.subscriberId) claims += `,"sub":"${subject.subscriberId}"`;
  if (subject.emailId) claims += `,"eml":"${subject.emailId}"`;
  if (subject.campaignId) claims += `,"cmp":"${subject.campaignId}"`;
  claims += `,"iat":${issuedAt},"exp":${issuedAt + options.ttlSeconds}}`;
  const signingInput = `${headerSegment(key.id)}.${Buffer.from(claims).toString("base64url")}`;
  return `${signingInput}.${createHmac("sha256", key.secret).update(signingInput).digest("base64url")}`;
}

export interface VerifyOptions {
  purpose: TokenPurpose;
  /**
   * Accept a token whose time is up (everything else is still checked): for
   * asking a fresh link to be mailed to the subscriber's own address, where
   * the old link only says which tenant to look in.
   */
  ignoreExpiry?: boolean;
  /** Milliseconds since the epoch; default now. */
  now?: number;
}

/** Checks form, algorithm, key, signature, expiry and purpose, in that order; throws TokenError. */
export function verifyToken(ring: KeyRing, token: string, options: VerifyOptions): VerifiedToken {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) throw new TokenError("malformed");
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((p) => SEGMENT.test(p))) throw new TokenError("malformed");
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeObject(headerPart);
  if (header.alg !== ALGORITHM) throw new TokenError("unsupported_algorithm");
  if (header.typ !== undefined && header.typ !== "JWT") throw new TokenError("malformed");
  // `crit` asks us to understand extensions we do not implement (RFC 7515 §4.1.11).
  if (header.crit !== undefined) throw new TokenError("malformed");
  const key = typeof header.kid === "string" ? ring.find(header.kid) : undefined;
  if (!key) throw new TokenError("unknown_key");
  const expected = mac(key.secret, `${headerPart}.${payloadPart}`);
  const given = decodeCanonical(signaturePart);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new TokenError("bad_signature");

  // Signed by us from here on; the claims are still checked, never trusted blindly.
  const claims = decodeObject(payloadPart);
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  const { iss, aud, acc, mode, sub, eml, cmp, iat, exp } = claims;
  if (typeof exp !== "number" || typeof iat !== "number" || !Number.isInteger(exp) || !Number.isInteger(iat)) {
    throw new TokenError("invalid_claims");
  }
  if (exp <= nowSeconds && options.ignoreExpiry !== true) throw new TokenError("expired");
  if (aud !== options.purpose) throw new TokenError("wrong_purpose");
  if (
    iss !== ISSUER ||
    iat > nowSeconds + CLOCK_SKEW_SECONDS ||
    typeof acc !== "string" ||
    (mode !== "live" && mode !== "test") ||
    (sub !== undefined && typeof sub !== "string") ||
    (eml !== undefined && typeof eml !== "string") ||
    (cmp !== undefined && typeof cmp !== "string")
  ) {
    throw new TokenError("invalid_claims");
  }
  const subject: TokenSubject = { purpose: options.purpose, accountId: acc, mode, subscriberId: sub, emailId: eml, campaignId: cmp };
  try {
    checkSubject(subject);
  } catch {
    throw new TokenError("invalid_claims");
  }
  return { ...subject, keyId: key.id, issuedAt: iat, expiresAt: exp };
}

function checkSubject(subject: TokenSubject): void {
  if (!ACCOUNT_ID.test(subject.accountId)) throw new TypeError("accountId is not an account id");
  if (subject.mode !== "live" && subject.mode !== "test") throw new TypeError("mode must be live or test");
  if (subject.subscriberId !== undefined && !SUBSCRIBER_ID.test(subject.subscriberId)) throw new TypeError("subscriberId is not a subscriber id");
  if (subject.emailId !== undefined && !EMAIL_ID.test(subject.emailId)) throw new TypeError("emailId is not an email id");
  if (subject.campaignId !== undefined && !CAMPAIGN_ID.test(subject.campaignId)) throw new TypeError("campaignId is not a campaign id");
  if (subject.subscriberId === undefined && subject.emailId === undefined) throw new TypeError("a token names a subscriber, an email or both");
}

/** The encoded header of a key's tokens, made once per key id (a campaign signs one link per message). */
const headerSegments = new Map<string, string>();
function headerSegment(keyId: string): string {
  let segment = headerSegments.get(keyId);
  if (segment === undefined) {
    segment = encode({ alg: ALGORITHM, typ: "JWT", kid: keyId });
    if (headerSegments.size >= 64) headerSegments.clear();
    headerSegments.set(keyId, segment);
  }
  return segment;
}

function mac(secret: Buffer, input: string): Buffer {
  return createHmac("sha256", secret).update(input).digest();
}

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** Base64url that re-encodes to itself: trailing bits a decoder would drop are tampering. */
function decodeCanonical(segment: string): Buffer {
  const bytes = Buffer.from(segment, "base64url");
  if (bytes.toString("base64url") !== segment) throw new TokenError("malformed");
  return bytes;
}

function decodeObject(segment: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(decodeCanonical(segment).toString("utf8"));
  } catch (err) {
    if (err instanceof TokenError) throw err;
    throw new TokenError("malformed");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new TokenError("malformed");
  return value as Record<string, unknown>;
}

/**
 * A secret bound to one token: the HMAC, under the key that signed the token,
 * of `label` and the token's signature. The portal page puts it in its forms
 * (`label` "csrf"): a form posted from elsewhere cannot know it, and it needs
 * no cookie, so it also works in an iframe where third-party cookies are
 * blocked. Undefined when the token's key is not in the ring.
 */
export function tokenBoundSecret(ring: KeyRing, token: string, label: string): string | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  let header: Record<string, unknown>;
  try {
    header = decodeObject(parts[0]!);
  } catch {
    return undefined;
  }
  const key = typeof header.kid === "string" ? ring.find(header.kid) : undefined;
  if (!key) return undefined;
  return mac(key.secret, `${label}.${parts[2]}`).toString("base64url");
}

/** Compares two secrets in constant time. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * A MAC of `data` for one use (`label`), under the ring's current key:
 * `<key id>.<HMAC-SHA256 base64url>`. For values the platform hands out and
 * must recognise as its own later (a signup form's proof-of-work challenge)
 * without a token's claims. Checked by `checkLabelledMac` with any key of the
 * ring, so that keys rotate without refusing what is in flight.
 */
export function labelledMac(ring: KeyRing, label: string, data: string): string {
  const key = ring.current;
  return `${key.id}.${mac(key.secret, `${label}.${data}`).toString("base64url")}`;
}

/** Whether `given` is `labelledMac(ring, label, data)` under a key the ring still holds (constant-time). */
export function checkLabelledMac(ring: KeyRing, label: string, data: string, given: string): boolean {
  const dot = given.indexOf(".");
  if (dot <= 0) return false;
  const key = ring.find(given.slice(0, dot));
  if (!key) return false;
  return sameSecret(given.slice(dot + 1), mac(key.secret, `${label}.${data}`).toString("base64url"));
}
