import type { Middleware } from "koa";
import { clientAddress } from "@emailsvc/ratelimit";
import type { RateClass } from "../ratelimit/config.js";
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
 * Failed authentication per client address, for the API-key and admin-token
 * middleware: `before` refuses (429) an address whose failure budget is spent
 * without looking at its credentials; `failed` charges a failure and gives the
 * headers for the 401 (or the 429 when the budget was spent meanwhile, e.g.
 * by this address on another replica).
 */
export interface AuthFailureGuard {
  before(ctx: GatewayContext): void;
  failed(ctx: GatewayContext): Promise<Record<string, string>>;
}

export function authFailureGuard(limiter: RateLimiter): AuthFailureGuard {
  const hops = limiter.config.trustedProxyHops;
  const address = (ctx: GatewayContext) => clientAddress(ctx.req.socket.remoteAddress, ctx.get("x-forwarded-for"), hops);
  return {
    before(ctx) {
      const blocked = limiter.authBlocked(address(ctx));
      if (blocked) throw rateLimited(blocked);
    },
    async failed(ctx) {
      const verdict = await limiter.authFailed(address(ctx));
      if (verdict && !verdict.allowed) throw rateLimited(verdict);
      return verdict?.headers ?? {};
    },
  };
}

/** No limits (RATE_LIMIT=off or RATE_LIMIT_AUTH_FAILURES=off). */
export const NO_AUTH_GUARD: AuthFailureGuard = { before: () => undefined, failed: async () => ({}) };
