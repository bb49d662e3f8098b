import type { ParameterizedContext } from "koa";
import type { RouterContext } from "@koa/router";
import type { KeyMode } from "@emailsvc/tenancy";
import type { Locale } from "@emailsvc/text";
import type { Problem } from "./problem.js";

/** Who called, as established by the API key. */
export interface KeyIdentity {
  accountId: string;
  mode: KeyMode;
  keyId: string;
}

/** Whose preferences a request may see and change, as established by a preference token. */
export interface PreferenceIdentity {
  accountId: string;
  mode: KeyMode;
  subscriberId: string;
}

/** What the middleware learns about a request, in `ctx.state`. */
export interface GatewayState {
  requestId: string;
  /** Set by the API-key middleware. */
  auth?: KeyIdentity;
  /** Set by the preference-token middleware (the portal API). */
  preference?: PreferenceIdentity;
  /** The validated JSON body (operations with a request body). */
  body?: unknown;
  /** The validated query, with defaults applied and numbers coerced. */
  query?: Record<string, unknown>;
  /** The validated header parameters the operation declares, by their declared names. */
  headers?: Record<string, unknown>;
  /**
   * Set by a route whose callers are people in a browser (the one-click
   * pages): how a problem is shown to them. A client that asks for JSON
   * (Accept) still gets problem+json.
   */
  problemPage?: (ctx: GatewayContext, problem: Problem) => void;
  /** The language a route's page speaks, once it knows (for its problem page). */
  pageLocale?: Locale;
  /** Gives this request's body `ms` from now to arrive (http/body-deadline.ts), for a route taking a large upload. */
  extendBodyDeadline?: (ms: number) => void;
}

export type GatewayContext = ParameterizedContext<GatewayState>;
export type GatewayRouterContext = RouterContext<GatewayState>;
