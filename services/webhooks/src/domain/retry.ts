// When a webhook that failed is tried again. Standard Webhooks suggests a
// schedule like this one; the last delay repeats until the message has been
// retried for `retryForMs` (3 days by default), then it fails.

export interface RetrySettings {
  /** Delay before the 2nd, 3rd, … attempt; the last repeats. */
  delaysMs: readonly number[];
  /** From the message's creation: no attempt is scheduled later than this. */
  retryForMs: number;
}

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
export const DEFAULT_RETRY: RetrySettings = {
  delaysMs: [5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H, 10 * H],
  retryForMs: 72 * H,
};

/** The time of the next attempt after `attempts` failed ones, or undefined: give up. */
export function nextAttemptAt(settings: RetrySettings, attempts: number, createdAt: number, now: number): number | undefined {
  const delays = settings.delaysMs;
  const delay = delays[Math.min(Math.max(attempts - 1, 0), delays.length - 1)] ?? 0;
  const at = now + delay;
  return at > createdAt + settings.retryForMs ? undefined : at;
}
