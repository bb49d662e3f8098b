import type { Middleware } from "koa";
import type { CallOptions } from "@connectrpc/connect";
import { clientAddress, RATE_LIMIT_HEADER_NAMES } from "@emailsvc/ratelimit";
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
 * before the body is read. With `costOf` (a batch: one per message, which
 * only the validated body tells), it runs after validation instead and
 * charges that many, all or none.
 */
export function limitApiKeyRequests(limiter: RateLimiter, cls: RateClass, costOf?: (ctx: GatewayContext) => number): Middleware<GatewayState> {
  return async (ctx, next) => {
    const identity = ctx.state.auth;
    if (!identity) throw new Error("limitApiKeyRequests runs after requireApiKey");
    const cost = costOf ? costOf(ctx) : 1;
    // A request that no wait would ever admit (a batch larger than a bucket holds) is told so, not to retry.
    const largest = limiter.largestCost(cls);
    if (largest !== undefined && cost > largest) {
      throw new Problem(
        "batch_exceeds_rate_limit",
        `This request counts ${cost} against the ${cls} budgets, which admit at most ${largest} at once; split it into smaller ones.`,
      );
    }
    const verdict = await limiter.admit(identity, cls, cost);
    if (verdict) {
      if (!verdict.allowed) throw rateLimited(verdict);
      ctx.set(verdict.headers);
    }
    await next();
  };
}

/**
 * The RateLimit headers a service set on its answer (the portal's budgets of
 * a subscriber's requests), passed on to the client of this request: the
 * options of the call to add, as limitApiKeyRequests sets the gateway's own.
 * A refusal's headers travel with the error (http/problem.ts).
 */
export function forwardRateLimitHeaders(ctx: GatewayContext): Pick<CallOptions, "onHeader"> {
  return {
    onHeader(headers) {
      for (const name of RATE_LIMIT_HEADER_NAMES) {
        const value = headers.get(name);
        if (value !== null) ctx.set(name, value);
      }
    },
  };
}

/**
 * /unsubscribe's budgets (RATE_LIMIT_UNSUBSCRIBE_ADDRESS, _LINK), charged
 * before any service is called: `address` the client's, first thing (its
 * body is not read past it); `link` a one-click POST's, once its token
 * verified. A spent budget is a 429 (a page, or problem+json for a JSON
 * client) with Retry-After and the RateLimit headers.
 */
export interface UnsubscribeGuard {
  address(ctx: GatewayContext): Promise<void>;
  link(ctx: GatewayContext, link: string): Promise<void>;
}

export function unsubscribeGuard(limiter: RateLimiter): UnsubscribeGuard {
  const hops = limiter.config.trustedProxyHops;
  const settle = (ctx: GatewayContext, verdict: Verdict | undefined) => {
    if (!verdict) return;
    if (!verdict.allowed) throw rateLimited(verdict);
    ctx.set(verdict.headers);
  };
  return {
    async address(ctx) {
      settle(ctx, await limiter.admitUnsubscribe(clientAddress(ctx.req.socket.remoteAddress, ctx.get("x-forwarded-for"), hops)));
    },
    async link(ctx, link) {
      settle(ctx, await limiter.admitOneClick(link));
    },
  };
}

/** No limits (RATE_LIMIT=off). */
export const NO_UNSUBSCRIBE_GUARD: UnsubscribeGuard = { address: async () => undefined, link: async () => undefined };

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
  /**
   * Whether the address has spent its budget, as this process sees it: for a
   * password sign-in, refused even when right (a password, unlike a key, can
   * be guessed, so guessing must stop). Undefined: not spent.
   */
  locked(ctx: GatewayContext): Verdict | undefined;
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
    locked(ctx) {
      return limiter.authLocked(address(ctx));
    },
  };
}

/** No limits (RATE_LIMIT=off or RATE_LIMIT_AUTH_FAILURES=off). */
export const NO_AUTH_GUARD: AuthFailureGuard = { failed: async () => ({}), locked: () => undefined };

/**
 * A provider's notification route (RATE_LIMIT_PROVIDER_NOTIFICATIONS): the
 * client address's budget, charged first thing (the body is not read past
 * it). Undefined limiter: no limits.
 */
export function providerNotificationGuard(limiter: RateLimiter | undefined): (ctx: GatewayContext) => Promise<void> {
  if (!limiter) return async () => undefined;
  const hops = limiter.config.trustedProxyHops;
  return async (ctx) => {
    const verdict = await limiter.admitProviderNotification(clientAddress(ctx.req.socket.remoteAddress, ctx.get("x-forwarded-for"), hops));
    if (!verdict) return;
    if (!verdict.allowed) throw rateLimited(verdict);
    ctx.set(verdict.headers);
  };
}
