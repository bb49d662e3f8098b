import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

// Members' passwords: scrypt (node:crypto), stored as one self-describing
// string `scrypt$N=32768,r=8,p=1$<salt>$<hash>` (base64url), so that the
// parameters can grow later and old hashes still verify. The password itself
// is never stored, logged or kept past the call.

/** What a password must be: long enough to resist guessing, short enough that hashing it costs nothing extra. */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 256;

const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
const SHAPE = /^scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }, length: number): Promise<Buffer> {
  // scrypt needs 128·N·r bytes; Node's default maxmem (32 MiB) is exactly that at N=2^15, r=8: leave room.
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFC"), salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** A new hash of `password`, with a fresh salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, PARAMS, HASH_BYTES);
  return `scrypt$N=${PARAMS.N},r=${PARAMS.r},p=${PARAMS.p}$${salt.toString("base64url")}$${hash.toString("base64url")}`;
}

/** Whether `password` is the one `stored` was made from; compared in constant time. A malformed `stored` never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = SHAPE.exec(stored);
  if (!match) return false;
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const expected = Buffer.from(match[5]!, "base64url");
  if (expected.length === 0) return false;
  const actual = await derive(password, Buffer.from(match[4]!, "base64url"), { N, r, p }, expected.length);
  return timingSafeEqual(actual, expected);
}

let decoy: Promise<string> | undefined;

/**
 * A hash no password is known for: a sign-in for an address that is no
 * member verifies against it, so that it costs the same time as a wrong
 * password and the answer's timing does not tell members apart.
 */
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(32).toString("base64url"));
  return decoy;
}
