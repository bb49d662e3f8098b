import { randomBytes } from "node:crypto";

// Ids are `<prefix>_<26 chars>`: 10 chars of millisecond time and 16 of
// randomness in Crockford base32 (ULID layout). They sort by creation time as
// plain strings, which makes `_id`-ordered cursors cheap, and they reveal
// nothing but the creation time.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

let lastTime = -1;
let lastRandom: number[] = [];

function encodeTime(ms: number): string {
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function randomDigits(): number[] {
  const bytes = randomBytes(16);
  return Array.from(bytes, (b) => b % 32);
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
    lastRandom = randomDigits();
  }
  return `${prefix}_${encodeTime(now)}${lastRandom.map((d) => ALPHABET[d]).join("")}`;
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
