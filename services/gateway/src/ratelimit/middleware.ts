import type { Middleware } from "koa";
import { counter } from "@emailsvc/runtime";
import { Problem } from "../http/problem.js";
import type { GatewayContext, GatewayState } from "../http/state.js";
import { clientAddress } from "./client-address.js";
import type { RateDecision, RateLimiter } from "./limiter.js";
import { budgetName, describeRate, rateClassOf, type RateClass } from "./policy.js";

// Koa middleware over a RateLimiter, and the 429 answer. Wiring (see the
// gateway's README, "Rate limits"):
//   auth: { ApiKey: limitFailedAuth(limiter, requireApiKey(authenticator), opts),
//           AdminToken: limitFailedAuth(limiter, requireAdmin(admin), opts) }
//   and, after the ApiKey middleware of each operation,
//   limitByKey(limiter, rateClassOf(operationId, method)).

const refusals = counter(
  "gateway_rate_limited_total",
  "Requests answered 429, by the budget that refused them (class and key kind; never the key).",
  ["class", "kind"],
);

/** GET and HEAD read; every other method writes (sends and previews: `rateClassOf` by operation). */
export function classByMethod(ctx: Pick<GatewayContext, "method">): RateClass {
  return rateClassOf("", ctx.method);
}

/**
 * Per API key and per tenant, after authentication (it needs `ctx.state.auth`):
 * takes one unit of the request's class, sets the RateLimit-* headers on the
 * response (also on success, so that clients can pace themselves), and answers
 * 429 `rate_limited` when a budget is spent.
 */
export function limitByKey(
  limiter: RateLimiter,
  rateClass: RateClass | ((ctx: GatewayContext) => RateClass),
): Middleware<GatewayState> {
  return async (ctx, next) => {
    const auth = ctx.state.auth;
    if (!auth) throw new Error("limitByKey runs after the API-key middleware (no ctx.state.auth)");
    const decision = await limiter.consume(typeof rateClass === "function" ? rateClass(ctx) : rateClass, {
      api_key: auth.keyId,
      tenant: `${auth.accountId}:${auth.mode}`,
    });
    setRateLimitHeaders(ctx, decision);
    if (!decision.allowed) throw rateLimitProblem(decision);
    await next();
  };
}

export interface FailedAuthOptions {
  /** RATE_LIMIT_TRUSTED_PROXY_HOPS (see client-address.ts); default 0. */
  trustedProxyHops?: number;
}

/**
 * Wraps an authentication middleware (requireApiKey, requireAdmin): a client
 * address whose failed-authentication budget is spent gets 429 before its
 * credentials are even looked at (so that guessing stops, not just its
 * answers change: a right guess would pass otherwise), and each 401 the
 * wrapped middleware raises is charged to the address. Successful requests
 * take nothing.
 *
 * Every request from a refused address is refused, a valid key included: a
 * valid key cannot be told from a guess without looking it up. Clients
 * behind one NAT share the budget; RATE_LIMIT_AUTH_FAILURE_PER_ADDRESS sizes it.
 */
export function limitFailedAuth(
  limiter: RateLimiter,
  authenticate: Middleware<GatewayState>,
  options: FailedAuthOptions = {},
): Middleware<GatewayState> {
  const hops = options.trustedProxyHops ?? 0;
  return async (ctx, next) => {
    if (limiter.budgets("auth_failure").length === 0) return authenticate(ctx, next);
    const keys = {
      client_address: clientAddress(
        { remoteAddress: ctx.req.socket.remoteAddress, forwardedFor: ctx.get("x-forwarded-for") || undefined },
        hops,
      ),
    };
    const before = await limiter.peek("auth_failure", keys);
    if (!before.allowed) {
      setRateLimitHeaders(ctx, before);
      throw rateLimitProblem(before);
    }
    let authenticated = false;
    try {
      await authenticate(ctx, () => {
        authenticated = true;
        return next();
      });
    } catch (err) {
      // Only the wrapped middleware's own 401s: errors after it (the
      // operation's) and its 5xx (store down) are no failed authentication.
      if (!authenticated && err instanceof Problem && err.status === 401) await limiter.charge("auth_failure", keys);
      throw err;
    }
  };
}

/**
 * The RateLimit-* fields of draft-ietf-httpapi-ratelimit-headers (the -06
 * form that most APIs send): Limit, Remaining and Reset (seconds until the
 * budget is full again) of the binding budget, and Policy listing every
 * budget that applied (`<limit>;w=<window seconds>`). Nothing when no budget
 * applied.
 */
export function setRateLimitHeaders(ctx: Pick<GatewayContext, "set">, decision: RateDecision): void {
  for (const [name, value] of Object.entries(rateLimitHeaders(decision))) ctx.set(name, value);
}

export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const binding = decision.binding;
  if (!binding) return {};
  return {
    "RateLimit-Limit": String(binding.budget.limit),
    "RateLimit-Remaining": String(binding.remaining),
    "RateLimit-Reset": String(Math.ceil(binding.resetMs / 1000)),
    "RateLimit-Policy": decision.budgets.map((state) => `${state.budget.limit};w=${state.budget.windowMs / 1000}`).join(", "),
  };
}

/** Whole seconds to wait before retrying, at least 1 (RFC 9110 Retry-After is delay-seconds). */
export function retryAfterSeconds(decision: RateDecision): number {
  return Math.max(1, Math.ceil((decision.binding?.retryAfterMs ?? 0) / 1000));
}

/**
 * The 429 problem for a refused decision, with `Retry-After` and the
 * RateLimit-* headers; thrown, it is written by the gateway's problems()
 * middleware like every other problem.
 */
export function rateLimitProblem(decision: RateDecision): Problem {
  const binding = decision.binding;
  if (!binding || decision.allowed) throw new Error("rateLimitProblem needs a refused decision");
  refusals.inc({ class: binding.budget.rateClass, kind: binding.budget.kind });
  const seconds = retryAfterSeconds(decision);
  const detail =
    `Rate limit of ${budgetName(binding.budget)} reached (${describeRate(binding.budget)}); ` +
    `retry in ${seconds} s. The RateLimit-* headers of every answer show what is left.`;
  return new Problem(429, "rate_limited", detail, {
    headers: { "Retry-After": String(seconds), ...rateLimitHeaders(decision) },
  });
}
