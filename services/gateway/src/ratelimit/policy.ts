import type { Rate } from "./gcra.js";

// The policy model: which budgets exist. A request of one class takes one unit
// from every budget of that class whose key it has; it is admitted only when
// all of them admit it (see limiter.ts).

/**
 * What a request costs. `read`: GET/HEAD. `write`: anything that changes
 * data, and template previews (they render like a write). `send`: POST
 * /api/v1/emails/send, the operation abuse would cost the most (mail leaves,
 * reputation is at stake). `auth_failure`: a request whose credentials were
 * missing or wrong (counted after the fact, per client address).
 */
export const RATE_CLASSES = ["read", "write", "send", "auth_failure"] as const;
export type RateClass = (typeof RATE_CLASSES)[number];

/**
 * Whose budget: one API key (`api_key`, its key id), one tenant (`tenant`,
 * `<account id>:<mode>`, shared by all keys of an account in one mode), or one
 * client address (`client_address`, an IPv4 address or an IPv6 /64).
 */
export const KEY_KINDS = ["api_key", "tenant", "client_address"] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

/** One budget of the policy. */
export interface Budget extends Rate {
  rateClass: RateClass;
  kind: KeyKind;
}

/** The budgets in force; at most one per class and kind. Empty: nothing is limited. */
export interface RateLimitPolicy {
  budgets: readonly Budget[];
}

/**
 * Operations whose class is not their method's: a send, and a preview (a POST
 * that changes nothing but renders like a write). By operation id of the
 * OpenAPI document.
 */
export const OPERATION_CLASSES: Readonly<Record<string, RateClass>> = {
  sendEmail: "send",
  previewTemplate: "write",
};

/** The class of an operation: named in OPERATION_CLASSES, else GET and HEAD read and the rest write. */
export function rateClassOf(operationId: string, method: string): RateClass {
  const named = OPERATION_CLASSES[operationId];
  if (named) return named;
  const upper = method.toUpperCase();
  return upper === "GET" || upper === "HEAD" ? "read" : "write";
}

/** The budgets of one class. */
export function budgetsOf(policy: RateLimitPolicy, rateClass: RateClass): Budget[] {
  return policy.budgets.filter((budget) => budget.rateClass === rateClass);
}

/** `send per api_key` style name, for 429 details and logs. */
export function budgetName(budget: Budget): string {
  const kind = budget.kind === "api_key" ? "API key" : budget.kind === "tenant" ? "account and mode" : "client address";
  const what = budget.rateClass === "auth_failure" ? "failed authentications" : `${budget.rateClass} requests`;
  return `${what} per ${kind}`;
}

/** `100 per 10 s` */
export function describeRate(rate: Rate): string {
  return `${rate.limit} per ${rate.windowMs / 1000} s`;
}

const SECOND = 1000;

/**
 * The defaults (see the "Rate limits" section of the gateway's README for the
 * reasoning). Generous for one integration (a key may read 50/s, write 20/s
 * and send 10/s, i.e. 36,000 mails an hour, with bursts of ten seconds' worth),
 * yet 2,000 reads, 900 sends or 2,000 wrong keys in ten seconds from one
 * client are mostly refused.
 */
export const DEFAULT_BUDGETS: readonly Budget[] = [
  { rateClass: "read", kind: "api_key", limit: 500, windowMs: 10 * SECOND },
  { rateClass: "read", kind: "tenant", limit: 1000, windowMs: 10 * SECOND },
  { rateClass: "write", kind: "api_key", limit: 200, windowMs: 10 * SECOND },
  { rateClass: "write", kind: "tenant", limit: 400, windowMs: 10 * SECOND },
  { rateClass: "send", kind: "api_key", limit: 100, windowMs: 10 * SECOND },
  { rateClass: "send", kind: "tenant", limit: 200, windowMs: 10 * SECOND },
  { rateClass: "auth_failure", kind: "client_address", limit: 20, windowMs: 60 * SECOND },
];
