import type { Middleware } from "koa";
import { TokenError, verifyToken, type KeyRing } from "@emailsvc/tokens";
import type { AdminTokenVerifier, ApiKeyAuthenticator } from "../accounts/authenticator.js";
import { Problem } from "./problem.js";
import { NO_AUTH_GUARD, type AuthFailureGuard } from "./rate-limit.js";
import type { GatewayState } from "./state.js";

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
