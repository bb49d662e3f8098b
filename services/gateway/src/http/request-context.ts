import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Middleware } from "koa";
import {
  context,
  counter,
  extractTraceContext,
  histogram,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingEnabled,
  type Logger,
  type Span,
} from "@emailsvc/telemetry";
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
 * Outermost middleware: request id, in-flight tracking, the request's span and
 * metrics, and the access log. The log line, the span and the metrics name the
 * route template, never the raw path (by-email lookups carry the address in
 * the path), and never the query string, a body or a key.
 */
export function requestContext(logger: Logger, inFlight: InFlight, draining: () => boolean): Middleware<GatewayState> {
  const requests = counter("http_requests_total", "REST requests answered, by route and status.", ["method", "route", "status"]);
  const duration = histogram("http_request_duration_seconds", "Time to answer a REST request, by route.", ["method", "route"]);
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

    // The request's span (when tracing is on): a caller's `traceparent` is
    // continued, so an integrator's trace reaches into ours. Everything below
    // runs inside it: service calls are its children, log lines carry its ids.
    let span: Span | undefined;
    let parent = context.active();
    if (tracingEnabled()) {
      parent = extractTraceContext((name) => ctx.get(name) || undefined);
      span = tracer().startSpan(`${ctx.method}`, { kind: SpanKind.SERVER, attributes: { "http.request.method": ctx.method } }, parent);
    }
    const run = async (): Promise<void> => {
      try {
        await next();
      } finally {
        // While draining, keep-alive connections are closed after their response
        // so that the server can stop (also for requests that began before).
        if (draining() && !ctx.headerSent) ctx.set("Connection", "close");
        const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
        const route = typeof matched === "string" ? matched : null;
        const seconds = (performance.now() - started) / 1000;
        // Unmatched paths share one label: a scanner's random paths must not make series.
        requests.inc({ method: ctx.method, route: route ?? "unmatched", status: String(ctx.status) });
        duration.observe({ method: ctx.method, route: route ?? "unmatched" }, seconds);
        if (span) {
          if (route) span.updateName(`${ctx.method} ${route}`);
          span.setAttributes({
            "http.route": route ?? "unmatched",
            "http.response.status_code": ctx.status,
            ...(ctx.state.auth ? { "emailsvc.account_id": ctx.state.auth.accountId, "emailsvc.mode": ctx.state.auth.mode } : {}),
            "emailsvc.request_id": requestId,
          });
          if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
        logger.info(
          {
            request_id: requestId,
            method: ctx.method,
            route,
            status: ctx.status,
            duration_ms: Math.round(seconds * 100_000) / 100,
            account_id: ctx.state.auth?.accountId ?? null,
            mode: ctx.state.auth?.mode ?? null,
          },
          "request",
        );
      }
    };
    await (span ? context.with(trace.setSpan(parent, span), run) : run());
  };
}
