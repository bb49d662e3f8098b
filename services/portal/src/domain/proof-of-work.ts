import { createHash, randomBytes, randomInt } from "node:crypto";

// The proof of work of a signup form, in the manner of ALTCHA's open
// challenge (our own code): the portal picks a secret number n in
// [0, maxNumber] and hands out salt and SHA-256(salt + n) ("challenge"),
// signed; the browser tries numbers until one hashes to the challenge and
// posts it back. A person's browser spends a second; a bot posting
// thousands of signups spends thousands of seconds. The salt carries the form
// and an expiry, and the signature makes both unforgeable; what is left is
// replay, which the caller stops by remembering each challenge until it
// expires (`ProofOfWorkVerdict.challenge` is the key to remember).

export const POW_ALGORITHM = "SHA-256";

/** What the portal hands out (GET …/challenge, and inside the interstitial page). */
export interface Challenge {
  algorithm: typeof POW_ALGORITHM;
  /** `<random>.<form id>.<expiry, seconds since the epoch>` */
  salt: string;
  /** SHA-256(salt + number), lower-case hex. */
  challenge: string;
  /** The number lies in [0, maxnumber]. */
  maxnumber: number;
  /** The platform's MAC of `challenge`. */
  signature: string;
}

/** What the browser posts back, base64url of this JSON in the form's `pow` field. */
export interface Solution {
  algorithm: string;
  salt: string;
  challenge: string;
  number: number;
  signature: string;
}

/** Signs and checks challenges (labelledMac of @emailsvc/tokens under the token keys). */
export interface ChallengeSigner {
  sign(challenge: string): string;
  check(challenge: string, signature: string): boolean;
}

export type ProofOfWorkFailure = "malformed" | "bad_signature" | "wrong_form" | "expired" | "wrong_number";

export type ProofOfWorkVerdict =
  | { ok: true; /** Remember it until `expiresAt` (ms): a second use is a replay. */ challenge: string; expiresAt: number }
  | { ok: false; reason: ProofOfWorkFailure };

/** Longest solution field taken (a challenge's JSON is ~300 characters). */
const MAX_SOLUTION_LENGTH = 1024;
const SALT = /^([0-9a-f]{24})\.(frm_[0-9a-z]{26})\.([0-9]{1,12})$/;
const HEX64 = /^[0-9a-f]{64}$/;

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

export function createChallenge(
  signer: ChallengeSigner,
  options: { formId: string; now: number; ttlMs: number; maxNumber: number },
): Challenge {
  const expires = Math.floor((options.now + options.ttlMs) / 1000);
  const salt = `${randomBytes(12).toString("hex")}.${options.formId}.${expires}`;
  const challenge = sha256Hex(salt + randomInt(0, options.maxNumber + 1));
  return { algorithm: POW_ALGORITHM, salt, challenge, maxnumber: options.maxNumber, signature: signer.sign(challenge) };
}

/** The number that solves `challenge`, by trying each in turn (what the browser's script does; tests use it). */
export function solveChallenge(challenge: Pick<Challenge, "salt" | "challenge" | "maxnumber">): number | undefined {
  for (let n = 0; n <= challenge.maxnumber; n++) if (sha256Hex(challenge.salt + n) === challenge.challenge) return n;
  return undefined;
}

export function encodeSolution(challenge: Challenge, number: number): string {
  const solution: Solution = { algorithm: challenge.algorithm, salt: challenge.salt, challenge: challenge.challenge, number, signature: challenge.signature };
  return Buffer.from(JSON.stringify(solution)).toString("base64url");
}

function decodeSolution(field: string): Solution | undefined {
  if (field.length === 0 || field.length > MAX_SOLUTION_LENGTH || !/^[A-Za-z0-9_-]+$/.test(field)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(field, "base64url").toString("utf8"));
    if (value === null || typeof value !== "object") return undefined;
    const s = value as Record<string, unknown>;
    if (typeof s.algorithm !== "string" || typeof s.salt !== "string" || typeof s.challenge !== "string" || typeof s.signature !== "string") return undefined;
    if (typeof s.number !== "number" || !Number.isSafeInteger(s.number) || s.number < 0) return undefined;
    return { algorithm: s.algorithm, salt: s.salt, challenge: s.challenge, number: s.number, signature: s.signature };
  } catch {
    return undefined;
  }
}

/**
 * Checks a posted solution for `formId` at `now`: its form, signature,
 * expiry and number. Single use is the caller's (see the verdict).
 */
export function verifySolution(signer: ChallengeSigner, field: string, formId: string, now: number): ProofOfWorkVerdict {
  const solution = decodeSolution(field);
  if (!solution || solution.algorithm !== POW_ALGORITHM || !HEX64.test(solution.challenge)) return { ok: false, reason: "malformed" };
  const salt = SALT.exec(solution.salt);
  if (!salt) return { ok: false, reason: "malformed" };
  // The signature covers the challenge, and the challenge the salt (form and expiry) through the hash below.
  if (!signer.check(solution.challenge, solution.signature)) return { ok: false, reason: "bad_signature" };
  if (salt[2] !== formId) return { ok: false, reason: "wrong_form" };
  const expiresAt = Number(salt[3]) * 1000;
  if (expiresAt <= now) return { ok: false, reason: "expired" };
  if (sha256Hex(solution.salt + solution.number) !== solution.challenge) return { ok: false, reason: "wrong_number" };
  return { ok: true, challenge: solution.challenge, expiresAt };
}
