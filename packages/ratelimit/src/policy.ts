import type { Policy } from "./gcra.js";

// Budgets as operators write them: "300/60s".

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };
const MAX_LIMIT = 1_000_000;
const MAX_WINDOW_MS = 24 * 3_600_000;

/**
 * `"<requests>/<window>"`, e.g. `"300/60s"`, `"20/1s"`, `"1000/1h"`, `"5/m"`
 * (the window in whole s, m or h, 1 s to 24 h); `"off"` is null (no budget).
 * Throws a RangeError saying what is wrong.
 */
export function parsePolicy(text: string): Policy | null {
  const value = text.trim();
  if (value.toLowerCase() === "off") return null;
  const match = /^(\d+)\s*\/\s*(\d*)\s*([smh])$/i.exec(value);
  if (!match) throw new RangeError(`must be "<requests>/<window>" such as "300/60s", "20/1s" or "1000/1h", or "off"`);
  const limit = Number(match[1]);
  const windowMs = Number(match[2] === "" ? 1 : match[2]) * UNIT_MS[match[3]!.toLowerCase()]!;
  if (limit < 1 || limit > MAX_LIMIT) throw new RangeError(`the number of requests must be 1 to ${MAX_LIMIT}`);
  if (windowMs < 1000 || windowMs > MAX_WINDOW_MS) throw new RangeError("the window must be 1 s to 24 h");
  return { limit, windowMs };
}

/** `100/1s` back, for logs and docs. */
export function formatPolicy(policy: Policy | null): string {
  if (policy === null) return "off";
  const seconds = policy.windowMs / 1000;
  if (seconds % 3600 === 0) return `${policy.limit}/${seconds / 3600}h`;
  if (seconds % 60 === 0 && seconds >= 60) return `${policy.limit}/${seconds / 60}m`;
  return `${policy.limit}/${seconds}s`;
}
