// The generic cell rate algorithm (GCRA), as pure functions of one number.
//
// Why GCRA rather than a fixed window, a sliding window or a token bucket:
//  - Fixed windows let a client spend a whole budget at the end of one window
//    and again at the start of the next (twice the limit in a moment); GCRA has
//    no window edges: the budget refills continuously, one unit every
//    `window / limit`.
//  - A sliding log is exact but keeps one timestamp per request (memory grows
//    with the limit); a sliding-window counter keeps two counters and only
//    approximates. GCRA keeps ONE number per key, the theoretical arrival time
//    (TAT): when the budget would be full again if no request came. O(1)
//    memory, and a key whose TAT has passed holds nothing worth keeping, so
//    idle keys are simply deleted (see memory-store.ts, shared-store.ts).
//  - It admits exactly what a token bucket of `limit` tokens refilled at
//    `limit / window` admits (a test checks this against such a model): `limit`
//    at once from full, then `limit` per window. But its state is one time,
//    not a count plus a refill time, so `Remaining` and `Reset` follow exactly
//    from it, and a shared store admits with one guarded increment
//    (shared-store.ts).
//  What a client sees: at most `limit` in any instant, and `limit + t / I` in
//  any stretch of t, so after an idle spell one window can see up to twice the
//  limit (a full budget, then a window's refill); over longer spans the
//  average is the limit.
//
// With a rate of `limit` per window and I = ⌈window / limit⌉, a request of
// cost c at time `now` against a stored TAT t:
//   base = max(t, now)            (a TAT in the past means a full budget)
//   next = base + c·I
//   admitted  ⇔  next − now ≤ W,  W = limit·I (the window, rounded up to a
//                                 multiple of I: at most `limit` µs longer)
//   remaining = ⌊(W − (next − now)) / I⌋   units still admissible at once
//   reset     = next − now                  until the budget is full again
//   retry     = next − W − now              (refused) until it is admitted
//
// Times are whole MICROSECONDS since the epoch: integers that a double holds
// exactly (1.8·10^15 < 2^53), so sums of I never drift and `limit` requests
// at once always fit (with fractional ms, 6 × 1666.67 rounded above 10,000 at
// today's epoch, and the 6th of 6 was refused).

/** A budget's size: `limit` units per `windowMs`, refilled continuously. */
export interface Rate {
  /** Units admitted at once from a full budget, and per window. Positive integer. */
  limit: number;
  /** Window in ms (a whole number of seconds: RateLimit-Policy states it in seconds). */
  windowMs: number;
}

export interface ConsumeOptions {
  /** Units this request takes; default 1. */
  cost?: number;
  /**
   * Take the units even when the budget does not allow them (a failure that
   * has already happened must still count). The TAT then moves past the
   * window, so later requests wait longer; it never moves more than two
   * windows ahead of now.
   */
  force?: boolean;
}

/** What a budget says about one request. */
export interface GcraResult {
  allowed: boolean;
  /** The TAT (µs) after this request: the new one when admitted, the stored one (or now) when refused. */
  tat: number;
  /** Units still admissible at once, after this request. */
  remaining: number;
  /** ms until the budget is full again. */
  resetMs: number;
  /** ms until this request would be admitted; 0 when admitted. */
  retryAfterMs: number;
}

/** Microseconds from the clock's milliseconds. */
export function toMicros(ms: number): number {
  return Math.round(ms * 1000);
}

/** I: µs between two units of refill (rounded up: never faster than the stated rate). */
export function emissionIntervalUs(rate: Rate): number {
  return Math.ceil((rate.windowMs * 1000) / rate.limit);
}

/** W: the span a full budget covers, `limit` intervals. */
function spanUs(rate: Rate): number {
  return rate.limit * emissionIntervalUs(rate);
}

/** The largest stored TAT at which a request of `cost` is admitted at `nowUs` (for guarded updates). */
export function latestAdmissibleTat(nowUs: number, rate: Rate, cost = 1): number {
  return nowUs + spanUs(rate) - cost * emissionIntervalUs(rate);
}

/** The most a forced charge may take the TAT to: two windows ahead. */
export function forcedTatCeiling(nowUs: number, rate: Rate): number {
  return nowUs + 2 * spanUs(rate);
}

/** A request of `options.cost` at `nowUs` against the stored TAT (undefined: never seen, or forgotten). */
export function gcraConsume(stored: number | undefined, nowUs: number, rate: Rate, options: ConsumeOptions = {}): GcraResult {
  const cost = options.cost ?? 1;
  const base = stored === undefined || stored < nowUs ? nowUs : stored;
  const next = base + cost * emissionIntervalUs(rate);
  if (next - nowUs <= spanUs(rate)) return gcraAdmitted(next, nowUs, rate);
  if (options.force === true) {
    const capped = Math.max(base, Math.min(next, forcedTatCeiling(nowUs, rate)));
    return { allowed: true, tat: capped, remaining: 0, resetMs: (capped - nowUs) / 1000, retryAfterMs: 0 };
  }
  return {
    allowed: false,
    tat: base,
    remaining: remainingAt(base, nowUs, rate),
    resetMs: (base - nowUs) / 1000,
    retryAfterMs: (next - spanUs(rate) - nowUs) / 1000,
  };
}

/** The answer for a request admitted with `tat` as the TAT after it (a shared store's increment). */
export function gcraAdmitted(tat: number, nowUs: number, rate: Rate): GcraResult {
  return { allowed: true, tat, remaining: remainingAt(tat, nowUs, rate), resetMs: Math.max(0, tat - nowUs) / 1000, retryAfterMs: 0 };
}

/** The budget as it stands, taking nothing: `allowed` says whether a request of `cost` would be admitted now. */
export function gcraPeek(stored: number | undefined, nowUs: number, rate: Rate, cost = 1): GcraResult {
  const base = stored === undefined || stored < nowUs ? nowUs : stored;
  const next = base + cost * emissionIntervalUs(rate);
  const allowed = next - nowUs <= spanUs(rate);
  return {
    allowed,
    tat: base,
    remaining: remainingAt(base, nowUs, rate),
    resetMs: (base - nowUs) / 1000,
    retryAfterMs: allowed ? 0 : (next - spanUs(rate) - nowUs) / 1000,
  };
}

/** The TAT after giving back `cost` units taken earlier (a later budget refused the request). */
export function gcraRefund(stored: number | undefined, rate: Rate, cost = 1): number | undefined {
  // A TAT at or before now already means a full budget: lowering it further
  // changes nothing, so no lower bound is needed.
  return stored === undefined ? undefined : stored - cost * emissionIntervalUs(rate);
}

function remainingAt(tat: number, nowUs: number, rate: Rate): number {
  const units = Math.floor((spanUs(rate) - Math.max(0, tat - nowUs)) / emissionIntervalUs(rate));
  return Math.max(0, Math.min(rate.limit, units));
}
