import type { Middleware } from "koa";
import type { Logger } from "@emailsvc/telemetry";
import { RATE_LIMIT_HEADER_NAMES } from "@emailsvc/ratelimit";
import type { ErrorCode } from "./error-codes.js";
import { PROBLEM_CONTENT_TYPE, Problem, problemBody, toProblem } from "./problem.js";
import type { GatewayContext, GatewayState } from "./state.js";

/** Writes a problem+json response. */
export function writeProblem(ctx: GatewayContext, problem: Problem): void {
  ctx.status = problem.status;
  setProblemHeaders(ctx, problem);
  ctx.body = problemBody(problem, ctx.state.requestId);
  ctx.type = PROBLEM_CONTENT_TYPE;
}

/**
 * Sets the headers a problem carries (Retry-After, Connection: close of a
 * 413, …), as problem+json or a page. A problem with Retry-After is the
 * refusal of a budget or quota (the gateway's, or a service's: the test-mode
 * quota, the portal's budgets), and its RateLimit headers are those it
 * carries, or none: the API key's, set on every answer before the request
 * went on (http/rate-limit.ts), go first. Its `Remaining: 16` beside a
 * quota's `Retry-After: 17280` would tell a client two different things.
 */
export function setProblemHeaders(ctx: GatewayContext, problem: Problem): void {
  const headers = Object.entries(problem.extra.headers ?? {});
  if (headers.some(([name]) => name.toLowerCase() === "retry-after")) {
    for (const name of RATE_LIMIT_HEADER_NAMES) ctx.remove(name);
  }
  for (const [name, value] of headers) ctx.set(name, value);
}

const DEFAULT_DETAILS: Record<number, { code: ErrorCode; detail: string }> = {
  404: { code: "not_found", detail: "No route matches this path." },
  405: { code: "method_not_allowed", detail: "The path does not support this method; see the Allow header." },
};

/**
 * Turns everything that goes wrong below into problem+json: thrown Problems,
 * failed service calls, bugs (generic 500, details only in the log), and the
 * empty 404/405 responses left behind when no route took the request (with
 * `Allow` already set for a 405).
 */
export function problems(logger: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body == null && ctx.status >= 400) {
        // Only 404 and 405 are left without a body (no route took the request); anything else is a bug.
        const fallback = DEFAULT_DETAILS[ctx.status];
        if (!fallback) throw new Error(`status ${ctx.status} answered without a body`);
        writeProblem(ctx, new Problem(fallback.code, fallback.detail));
      }
    } catch (err) {
      const { problem, internal } = toProblem(err);
      if (internal) {
        const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
        logger.error(
          {
            request_id: ctx.state.requestId,
            route: typeof route === "string" ? route : null,
            // The name, code and message of a failed call or bug; service
            // messages never carry personal data (see runtime errors.ts).
            err: describeError(err),
          },
          "request failed",
        );
      }
      if (ctx.state.problemPage && !prefersJson(ctx)) ctx.state.problemPage(ctx, problem);
      else writeProblem(ctx, problem);
    }
  };
}

/** Whether the client asks for JSON rather than a page (Accept; none or `*\/*` is a page). */
function prefersJson(ctx: GatewayContext): boolean {
  const best = ctx.accepts("text/html", "application/problem+json", "application/json");
  return best === "application/problem+json" || best === "application/json";
}

function describeError(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    return { name: err.name, message: err.message, code: (err as { code?: unknown }).code, stack: err.stack };
  }
  return { value: String(err) };
}

/**
 * Errors of a connection the client ended or reset: the socket's own
 * (ECONNRESET, EPIPE, ECONNABORTED), a stream cut short, or the HTTP parser
 * meeting the end of a request that was never finished (HPE_…).
 */
export function isClientGone(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return ["ECONNRESET", "EPIPE", "ECONNABORTED", "ERR_STREAM_PREMATURE_CLOSE"].includes(code) || code.startsWith("HPE_");
}
