// The rate-limit algorithm: GCRA (the generic cell rate algorithm of ATM
// networks, a token bucket computed from one timestamp instead of refilled).
//
// Why GCRA and not a window:
//  - A fixed window ("100 per second, counted per calendar second") lets a
//    client send 100 at the end of one window and 100 at the start of the next:
//    twice the limit in an instant. GCRA has no window edges: a budget of
//    `limit` per `window` admits at most `limit` at once, then one more every
//    `window / limit`; in any span of t ms at most limit + t·limit/window.
//  - A sliding log is exact but keeps one timestamp per request (O(limit)
//    memory per key); a sliding-window counter is O(1) but only estimates, so
//    its Remaining is a guess. GCRA keeps one number per key, the theoretical
//    arrival time (TAT), and Remaining, Reset and Retry-After follow from it
//    exactly.
//  - A key whose TAT is in the past is indistinguishable from a key never
//    seen (its bucket is full), so idle keys can be forgotten without losing
//    anything: memory holds only keys that are being limited right now.
//  - The shared store can apply it with single-document guarded updates
//    (see document-store.ts): no transaction, no read-modify-write race.
//
// All times are milliseconds on one clock (Date.now() unless injected), and
// every TAT is a multiple of 1/1024 ms: the emission interval is rounded UP to
// that grid (so a budget is never faster than stated; its span, limit ×
// interval, exceeds the window by less than limit/1024 ms), and clock readings
// are put on it. Multiples of 2^-10 below 2^43 ms (the year 2248) are exact in
// a double, so sums of intervals never drift and comparisons are exact. With
// window/limit in plain floating point, 6 per 10 s or 7 per 1 s refused the
// last request of a full budget at today's epoch: the sum of six 1666.67 ms
// rounded above 10,000 ms by more than any fixed epsilon (one ulp there is
// 2.4e-4 ms).

/** A budget: `limit` requests per `windowMs`, at most `limit` at once. */
export interface Policy {
  limit: number;
  windowMs: number;
}

/** A counter: what is counted (an id, never personal data) and its budget. */
export interface Bucket {
  key: string;
  policy: Policy;
  /**
   * Requests one charge counts for (default 1): a campaign charges a batch of
   * messages at once. Refused when the bucket lacks room for all of them; at
   * most `policy.limit`.
   */
  cost?: number;
}

/** What a response tells the client about one bucket. */
export interface BucketState {
  limit: number;
  /** Requests that would be admitted right now. */
  remaining: number;
  /** Until the bucket is full again (Remaining back at the limit). */
  resetMs: number;
}

export interface Decision extends BucketState {
  allowed: boolean;
  /** The TAT to store when allowed (the bucket's new state). */
  tat: number;
  /** When refused: until one request would be admitted; 0 when allowed. */
  retryAfterMs: number;
  /** The state before this request (what a refusal of another bucket leaves it at). */
  before: BucketState;
}

/** Steps per ms of every time here (see above). */
const GRID = 1024;

// TATs and clock readings sit on the grid, so comparisons are exact; this
// only keeps the guarded writes' bounds safe should a TAT written before the
// grid still be stored (off the grid until its bucket is full again).
export const TAT_EPSILON = 1e-6;

/** A clock reading on the grid (Date.now() already is). */
export function onGrid(ms: number): number {
  return Math.floor(ms * GRID) / GRID;
}

/** Time one request adds: window / limit, rounded up to the grid. */
export function emissionMs(policy: Policy): number {
  return Math.ceil((policy.windowMs * GRID) / policy.limit) / GRID;
}

/** What a full bucket spans: `limit` emission intervals (the window, rounded up to whole intervals). */
export function spanMs(policy: Policy): number {
  return policy.limit * emissionMs(policy);
}

/** How far ahead of now the TAT may run while a request is still admitted. */
export function toleranceMs(policy: Policy): number {
  return spanMs(policy) - emissionMs(policy);
}

/**
 * The decision for one request at `now` on a bucket whose TAT is `tat`
 * (undefined: never seen, or forgotten because it was full).
 */
export function decide(policy: Policy, tat: number | undefined, now: number, cost = 1): Decision {
  const base = Math.max(tat ?? now, now);
  const next = base + cost * emissionMs(policy);
  const allowAt = next - spanMs(policy);
  const before = stateAt(policy, base, now);
  if (now + TAT_EPSILON < allowAt) {
    return { allowed: false, tat: base, ...before, remaining: 0, retryAfterMs: allowAt - now, before };
  }
  return { allowed: true, tat: next, ...stateAt(policy, next, now), retryAfterMs: 0, before };
}

/** The state of a bucket at `now` without taking from it. */
export function stateAt(policy: Policy, tat: number | undefined, now: number): BucketState {
  const emission = emissionMs(policy);
  const ahead = Math.max((tat ?? now) - now, 0);
  const remaining = Math.floor((spanMs(policy) - ahead) / emission + TAT_EPSILON);
  return { limit: policy.limit, remaining: Math.min(Math.max(remaining, 0), policy.limit), resetMs: ahead };
}

/** Whether a bucket with this TAT is full at `now`, i.e. the same as one never seen. */
export function isIdle(tat: number, now: number): boolean {
  return tat <= now;
}
