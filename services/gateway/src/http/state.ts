import type { ParameterizedContext } from "koa";
import type { RouterContext } from "@koa/router";
import type { KeyMode } from "@emailsvc/tenancy";
import type { Locale } from "@emailsvc/text";
import type { Role } from "../members/roles.js";
import type { LiveSession } from "../members/sessions.js";
import type { Problem } from "./problem.js";

/** The member behind a dashboard session. */
export interface MemberIdentity {
  id: string;
  email: string;
  role: Role;
  sessionId: string;
}

/**
 * Who called: an API key (`keyId`), or a member signed in to the dashboard
 * (`member`; the mode from X-Mode). Exactly one of the two is set.
 */
export interface KeyIdentity {
  accountId: string;
  mode: KeyMode;
  keyId?: string;
  member?: MemberIdentity;
}

/** The actor services record for a call: `member:<id>` or `api_key:<id>`. */
export function actorOf(identity: KeyIdentity): string {
  return identity.member ? `member:${identity.member.id}` : `api_key:${identity.keyId}`;
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
  /** Set by the API-key or session middleware. */
  auth?: KeyIdentity;
  /** Set by the session middleware: the session and its member. */
  session?: LiveSession;
  /**
   * Set by a public route that acts for a member (sign-in, an accepted
   * invitation, a password reset): whom the account's audit log names.
   */
  auditActor?: { type: "member"; id: string; email: string; accountId: string };
  /** Set by the operator's routes: the account a change was made to (its audit log). */
  auditAccount?: string;
  /** Set by defineRoute: the operation a request is, for the audit log. */
  operation?: { id: string; path: string };
  /** The route's path parameters (set by defineRoute, for the audit log). */
  pathParams?: Record<string, string>;
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
