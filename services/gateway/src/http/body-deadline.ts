import type { Middleware } from "koa";
import type { GatewayState } from "./state.js";

/** How long a request's body may take to arrive, unless its route allows more (default). */
export const BODY_DEADLINE_MS = 30_000;

/**
 * A slow client may not hold a request open forever: a request whose body
 * has not all arrived `ms` after it reached the gateway loses its
 * connection. This replaces Node's server-wide `requestTimeout` (which was
 * 30 s for every request) so that a route streaming a large upload (a
 * subscriber import) can allow its own, longer deadline
 * (`ctx.state.extendBodyDeadline`); the headers keep Node's `headersTimeout`.
 */
export function bodyDeadline(ms = BODY_DEADLINE_MS): Middleware<GatewayState> {
  return async (ctx, next) => {
    const req = ctx.req;
    let timer: NodeJS.Timeout | undefined;
    const clear = () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    };
    const arm = (limit: number) => {
      clear();
      if (req.complete) return;
      timer = setTimeout(() => {
        if (!req.complete) req.socket.destroy();
      }, limit);
      timer.unref();
    };
    req.once("end", clear);
    req.once("close", clear);
    ctx.state.extendBodyDeadline = arm;
    arm(ms);
    await next();
  };
}
