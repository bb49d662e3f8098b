import type { Middleware } from "koa";
import { TokenError, verifyToken, type KeyRing } from "@emailsvc/tokens";
import { timingSafeEqual } from "node:crypto";
import type { AdminTokenVerifier, ApiKeyAuthenticator } from "../accounts/authenticator.js";
import type { SessionAuthenticator } from "../members/sessions.js";
import { Problem } from "./problem.js";
import { NO_AUTH_GUARD, type AuthFailureGuard } from "./rate-limit.js";
import type { GatewayState } from "./state.js";
import { roleAtLeast, type Role } from "../members/roles.js";

// One answer for a missing, unknown and revoked key alike (apart from the
// missing case): telling them apart would help someone probing for keys.
const API_KEY_CHALLENGE = { "WWW-Authenticate": 'ApiKey realm="emailsvc", header="X-API-Key"' };
const ADMIN_CHALLENGE = { "WWW-Authenticate": 'Bearer realm="emailsvc-admin"' };

// Invalid credentials count against the client address's failure budget
// (`guard`); once an address has spent it, its invalid credentials get 429
// instead of 401. Valid credentials are always checked and served, so a
// guesser cannot lock out the others behind the same address (a proxy, a
// NAT). A missing credential is no guess and costs no lookup: not counted.

/** Requires a valid `X-API-Key`; sets `ctx.state.auth`. */
export function requireApiKey(authenticator: ApiKeyAuthenticator, guard: AuthFailureGuard = NO_AUTH_GUARD): Middleware<GatewayState> {
  return async (ctx, next) => {
    const presented = ctx.get("x-api-key");
    if (!presented) {
      throw new Problem("missing_api_key", "Send your API key in the X-API-Key header.", { headers: API_KEY_CHALLENGE });
    }
    const identity = await authenticator.authenticate(presented);
    if (!identity) {
      const limits = await guard.failed(ctx);
      throw new Problem("invalid_api_key", "The API key is not valid or has been revoked.", {
        headers: { ...API_KEY_CHALLENGE, ...limits },
      });
    }
    ctx.state.auth = identity;
    await next();
  };
}

const SESSION_CHALLENGE = { "WWW-Authenticate": 'Cookie realm="emailsvc-dashboard"' };
const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** How the gateway reads and writes the dashboard's session cookie. */
export interface SessionCookie {
  name: string;
  secure: boolean;
}

/** The cookie's value from the request's Cookie header; undefined when absent. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function sameSecret(presented: string, expected: string): boolean {
  const a = Buffer.from(presented, "utf8");
  const b = Buffer.from(expected, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Requires an `X-API-Key` (`apiKeys`, when the operation takes one) or the
 * dashboard's session cookie (`sessions`, when it takes a session); a key
 * wins when both are sent. With the cookie, an unsafe method needs
 * `X-CSRF-Token` equal to the session's token (403 `csrf_failed`; the cookie
 * is SameSite=Strict too), the mode comes from `X-Mode` (default live), and
 * `ctx.state.auth` names the member and their role. Invalid cookies count
 * against the client address's failed-authentication budget, as keys do.
 */
export function requireCredential(options: {
  apiKeys?: ApiKeyAuthenticator;
  sessions?: { authenticator: SessionAuthenticator; cookie: SessionCookie };
  guard?: AuthFailureGuard;
}): Middleware<GatewayState> {
  const guard = options.guard ?? NO_AUTH_GUARD;
  const keys = options.apiKeys ? requireApiKey(options.apiKeys, guard) : undefined;
  const sessions = options.sessions;
  return async (ctx, next) => {
    if (keys && ctx.get("x-api-key")) return keys(ctx, next);
    const token = sessions ? readCookie(ctx.get("cookie"), sessions.cookie.name) : undefined;
    if (!sessions || token === undefined) {
      if (keys) return keys(ctx, next);
      throw new Problem("missing_session", "Sign in first (POST /api/v1/session): this operation takes the dashboard's session cookie.", { headers: SESSION_CHALLENGE });
    }
    const live = await sessions.authenticator.authenticate(token);
    if (!live) {
      const limits = await guard.failed(ctx);
      throw new Problem("invalid_session", "The session has ended (signed out, expired, or the member was removed); sign in again.", {
        headers: { ...SESSION_CHALLENGE, ...limits },
      });
    }
    if (UNSAFE.has(ctx.method) && !sameSecret(ctx.get("x-csrf-token"), live.session.csrfToken)) {
      throw new Problem("csrf_failed", "Send the session's csrf_token (from POST or GET /api/v1/session) in the X-CSRF-Token header.");
    }
    const mode = ctx.get("x-mode") || "live";
    if (mode !== "live" && mode !== "test") {
      throw new Problem("validation_failed", "The X-Mode header must be live or test.", { errors: [{ field: "X-Mode", message: "must be live or test" }] });
    }
    ctx.state.auth = {
      accountId: live.member.accountId,
      mode,
      member: { id: live.member.id, email: live.member.email, role: live.member.role, sessionId: live.session.id },
    };
    ctx.state.session = live;
    await next();
  };
}

/** After requireCredential: a member needs at least `role` (403 `role_forbidden` naming it); an API key passes. */
export function requireRole(role: Role): Middleware<GatewayState> {
  return async (ctx, next) => {
    const member = ctx.state.auth?.member;
    if (member && !roleAtLeast(member.role, role)) {
      throw new Problem("role_forbidden", `This needs the role ${role} or above; you are ${member.role}.`);
    }
    await next();
  };
}

/** Requires `Authorization: Bearer <ADMIN_TOKEN>`. */
export function requireAdmin(verifier: AdminTokenVerifier, guard: AuthFailureGuard = NO_AUTH_GUARD): Middleware<GatewayState> {
  return async (ctx, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get("authorization"));
    if (!match) {
      throw new Problem("missing_admin_token", "Send the admin token as `Authorization: Bearer <token>`.", {
        headers: ADMIN_CHALLENGE,
      });
    }
    if (!(await verifier.verify(match[1]!))) {
      const limits = await guard.failed(ctx);
      throw new Problem("invalid_admin_token", "The admin token is not valid.", { headers: { ...ADMIN_CHALLENGE, ...limits } });
    }
    await next();
  };
}

/** The challenge of a refused preference token (the portal API). */
export const PREFERENCE_CHALLENGE = 'Bearer realm="emailsvc-preferences"';

/**
 * Requires `Authorization: Bearer <preference token>` (purpose `preferences`,
 * naming a subscriber); sets `ctx.state.preference`. The problem says why a
 * token was refused (expired, tampered, another key...) without repeating it.
 * Whether its subscriber still exists is the portal's check: an erased
 * subscriber's tokens all die with them.
 */
export function requirePreferenceToken(keys: KeyRing | undefined, guard: AuthFailureGuard = NO_AUTH_GUARD): Middleware<GatewayState> {
  return async (ctx, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get("authorization"));
    if (!match) {
      throw new Problem("missing_preference_token", "Send the preference token as `Authorization: Bearer <token>`.", {
        headers: { "WWW-Authenticate": PREFERENCE_CHALLENGE },
      });
    }
    if (!keys) throw new Problem("service_unavailable", "Preference tokens are not configured on this gateway (TOKEN_SIGNING_KEYS).");
    let reason: string;
    try {
      const token = verifyToken(keys, match[1]!, { purpose: "preferences" });
      if (token.subscriberId) {
        ctx.state.preference = { accountId: token.accountId, mode: token.mode, subscriberId: token.subscriberId };
        return next();
      }
      reason = "the token names no subscriber";
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      reason = err.message;
    }
    const limits = await guard.failed(ctx);
    throw new Problem("invalid_preference_token", `The preference token is not valid: ${reason}. Ask for a new link.`, {
      headers: { "WWW-Authenticate": `${PREFERENCE_CHALLENGE}, error="invalid_token"`, ...limits },
    });
  };
}
