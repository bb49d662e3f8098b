import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Middleware } from "koa";
import type { Logger } from "@emailsvc/runtime";
import type { GatewayState } from "./state.js";

// A caller's X-Request-Id is kept when it is short and plain, so that one id
// follows a request through the caller's logs and ours; anything else (long,
// with spaces or control characters that could forge log lines) is replaced.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Counts requests in flight so that shutdown can wait for them. */
export class InFlight {
  private count = 0;
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.count;
  }

  enter(): void {
    this.count += 1;
  }

  leave(): void {
    this.count -= 1;
    if (this.count === 0) {
      for (const wake of this.waiters.splice(0)) wake();
    }
  }

  /** Resolves when no request is in flight. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/**
 * Outermost middleware: request id, in-flight tracking and the access log.
 * The log line names the route template, never the raw path (by-email lookups
 * carry the address in the path), and never the query string, a body or a key.
 */
export function requestContext(logger: Logger, inFlight: InFlight, draining: () => boolean): Middleware<GatewayState> {
  return async (ctx, next) => {
    const started = performance.now();
    inFlight.enter();
    // A request counts until its response is written (or the client is gone),
    // which is after the middleware chain returns.
    ctx.res.once("close", () => inFlight.leave());

    const incoming = ctx.get("x-request-id");
    const requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set("X-Request-Id", requestId);
    try {
      await next();
    } finally {
      // While draining, keep-alive connections are closed after their response
      // so that the server can stop (also for requests that began before).
      if (draining() && !ctx.headerSent) ctx.set("Connection", "close");
      const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      logger.info(
        {
          request_id: requestId,
          method: ctx.method,
          route: typeof route === "string" ? route : null,
          status: ctx.status,
          duration_ms: Math.round((performance.now() - started) * 100) / 100,
          account_id: ctx.state.auth?.accountId ?? null,
          mode: ctx.state.auth?.mode ?? null,
        },
        "request",
      );
    }
  };
}
