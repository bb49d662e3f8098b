import { createHash, randomBytes, randomFillSync } from "node:crypto";

// Ids are `<prefix>_<26 chars>`: 10 chars of millisecond time and 16 of
// randomness in Crockford base32 (ULID layout). They sort by creation time as
// plain strings, which makes `_id`-ordered cursors cheap, and they reveal
// nothing but the creation time.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

let lastTime = -1;
let lastTimePart = "";
let lastRandom: number[] = [];

function encodeTime(ms: number): string {
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/**
 * Random bytes for newId, filled 4 KiB at a time: a campaign makes several
 * ids per recipient (its email, its events), and one randomBytes call each
 * was most of an id's cost.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function randomDigits(): number[] {
  if (poolAt + 16 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const digits = new Array<number>(16);
  for (let i = 0; i < 16; i++) digits[i] = pool[poolAt + i]! % 32;
  poolAt += 16;
  return digits;
}

/** Increments the random part so that ids made in one millisecond still sort. */
function increment(digits: number[]): number[] {
  const next = digits.slice();
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i]! < 31) {
      next[i]! += 1;
      return next;
    }
    next[i] = 0;
  }
  return randomDigits();
}

export function newId(prefix: string): string {
  const now = Date.now();
  if (now === lastTime) {
    lastRandom = increment(lastRandom);
  } else {
    lastTime = now;
    lastTimePart = encodeTime(now);
    lastRandom = randomDigits();
  }
  let out = `${prefix}_${lastTimePart}`;
  for (const digit of lastRandom) out += ALPHABET[digit];
  return out;
}

const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

/** True when `value` has the shape of an id with this prefix. */
export function isId(prefix: string, value: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}

/**
 * `<prefix>_<26 random chars>`, with no time part: for ids that are public
 * and must not be guessed (a signup form's id sits in customers' HTML and
 * names their account). They do not sort by creation time.
 */
export function newRandomId(prefix: string): string {
  return `${prefix}_${Array.from(randomBytes(26), (b) => ALPHABET[b % 32]).join("")}`;
}

/**
 * An id made from what is known again after a restart, not from chance: the
 * time `atMs`, a `seed` (an import job's id) and a number within it (a row).
 * The same inputs give the same id, so a write repeated after a crash clashes
 * with the first one instead of making a second record. Ids of one seed sort
 * by `n` (at most 32^5 - 1); the seed's part is a hash, so two seeds at one
 * millisecond differ.
 */
export function derivedId(prefix: string, atMs: number, seed: string, n: number): string {
  if (!Number.isSafeInteger(n) || n < 0 || n >= 32 ** 5) throw new RangeError("derivedId: n out of range");
  const hash = createHash("sha256").update(seed).digest();
  let seedPart = "";
  for (let i = 0; i < 11; i++) seedPart += ALPHABET[hash[i]! % 32];
  let nPart = "";
  for (let i = 0, rest = n; i < 5; i++, rest = Math.floor(rest / 32)) nPart = ALPHABET[rest % 32] + nPart;
  return `${prefix}_${encodeTime(atMs)}${seedPart}${nPart}`;
}
