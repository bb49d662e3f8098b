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
// All times are milliseconds on one clock (Date.now() unless injected).

/** A budget: `limit` requests per `windowMs`, at most `limit` at once. */
export interface Policy {
  limit: number;
  windowMs: number;
}

/** A counter: what is counted (an id, never personal data) and its budget. */
export interface Bucket {
  key: string;
  policy: Policy;
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

// Float sums of window/limit drift by a few ulps; counts are whole, so a
// difference this small is rounding, not a request.
export const TAT_EPSILON = 1e-6;

/** Time one request adds: window / limit. */
export function emissionMs(policy: Policy): number {
  return policy.windowMs / policy.limit;
}

/** How far ahead of now the TAT may run while a request is still admitted. */
export function toleranceMs(policy: Policy): number {
  return policy.windowMs - emissionMs(policy);
}

/**
 * The decision for one request at `now` on a bucket whose TAT is `tat`
 * (undefined: never seen, or forgotten because it was full).
 */
export function decide(policy: Policy, tat: number | undefined, now: number): Decision {
  const base = Math.max(tat ?? now, now);
  const next = base + emissionMs(policy);
  const allowAt = next - policy.windowMs;
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
  const remaining = Math.floor((policy.windowMs - ahead) / emission + TAT_EPSILON);
  return { limit: policy.limit, remaining: Math.min(Math.max(remaining, 0), policy.limit), resetMs: ahead };
}

/** Whether a bucket with this TAT is full at `now`, i.e. the same as one never seen. */
export function isIdle(tat: number, now: number): boolean {
  return tat <= now;
}
