import type { ParameterizedContext } from "koa";
import type { RouterContext } from "@koa/router";
import type { KeyMode } from "@emailsvc/runtime";

/** Who called, as established by the API key. */
export interface KeyIdentity {
  accountId: string;
  mode: KeyMode;
  keyId: string;
}

/** What the middleware learns about a request, in `ctx.state`. */
export interface GatewayState {
  requestId: string;
  /** Set by the API-key middleware. */
  auth?: KeyIdentity;
  /** The validated JSON body (operations with a request body). */
  body?: unknown;
  /** The validated query, with defaults applied and numbers coerced. */
  query?: Record<string, unknown>;
  /** The validated header parameters the operation declares, by their declared names. */
  headers?: Record<string, unknown>;
}

export type GatewayContext = ParameterizedContext<GatewayState>;
export type GatewayRouterContext = RouterContext<GatewayState>;
