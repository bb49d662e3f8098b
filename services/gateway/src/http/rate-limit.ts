import type { Middleware } from "koa";
import { clientAddress } from "@emailsvc/ratelimit";
import type { PreferenceRateClass, RateClass } from "../ratelimit/config.js";
import type { RateLimiter, Verdict } from "../ratelimit/limiter.js";
import { Problem } from "./problem.js";
import type { GatewayContext, GatewayState } from "./state.js";

/** 429 `rate_limited`, its detail naming the budget, with Retry-After and the RateLimit headers. */
export function rateLimited(verdict: Verdict): Problem {
  return new Problem("rate_limited", verdict.detail ?? "Too many requests.", { headers: verdict.headers });
}

/**
 * After the API-key middleware: charges the request to its key's and
 * tenant's budget of `cls`, sets the RateLimit headers (on every answer,
 * so clients can pace themselves), and answers 429 when a budget is spent,
 * before the body is read.
 */
export function limitApiKeyRequests(limiter: RateLimiter, cls: RateClass): Middleware<GatewayState> {
  return async (ctx, next) => {
    const identity = ctx.state.auth;
    if (!identity) throw new Error("limitApiKeyRequests runs after requireApiKey");
    const verdict = await limiter.admit(identity, cls);
    if (verdict) {
      if (!verdict.allowed) throw rateLimited(verdict);
      ctx.set(verdict.headers);
    }
    await next();
  };
}

/**
 * After the preference-token middleware: charges the request to its
 * subscriber's and tenant's preference budget of `cls`, as limitApiKeyRequests
 * does for API keys (headers on every answer, 429 before the body is read).
 */
export function limitPreferenceRequests(limiter: RateLimiter, cls: PreferenceRateClass): Middleware<GatewayState> {
  return async (ctx, next) => {
    const identity = ctx.state.preference;
    if (!identity) throw new Error("limitPreferenceRequests runs after requirePreferenceToken");
    const verdict = await limiter.admitPreference(identity, cls);
    if (verdict) {
      if (!verdict.allowed) throw rateLimited(verdict);
      ctx.set(verdict.headers);
    }
    await next();
  };
}

/**
 * Failed authentication per client address, for the credential middleware
 * (API key, admin token, preference token). A presented credential is always
 * checked: a valid one is served whatever its address did (its own budgets
 * apply), so one guesser behind a shared proxy locks nobody else out. Only a
 * failure is charged to the address: `failed` gives the headers for its 401,
 * or refuses it with 429 once the address has spent its budget.
 */
export interface AuthFailureGuard {
  failed(ctx: GatewayContext): Promise<Record<string, string>>;
}

export function authFailureGuard(limiter: RateLimiter): AuthFailureGuard {
  const hops = limiter.config.trustedProxyHops;
  const address = (ctx: GatewayContext) => clientAddress(ctx.req.socket.remoteAddress, ctx.get("x-forwarded-for"), hops);
  return {
    async failed(ctx) {
      const verdict = await limiter.authFailed(address(ctx));
      if (verdict && !verdict.allowed) throw rateLimited(verdict);
      return verdict?.headers ?? {};
    },
  };
}

/** No limits (RATE_LIMIT=off or RATE_LIMIT_AUTH_FAILURES=off). */
export const NO_AUTH_GUARD: AuthFailureGuard = { failed: async () => ({}) };
