import type { Middleware } from "koa";
import type { AdminTokenVerifier, ApiKeyAuthenticator } from "../accounts/authenticator.js";
import { Problem } from "./problem.js";
import type { GatewayState } from "./state.js";

// One answer for a missing, unknown and revoked key alike (apart from the
// missing case): telling them apart would help someone probing for keys.
const API_KEY_CHALLENGE = { "WWW-Authenticate": 'ApiKey realm="emailsvc", header="X-API-Key"' };
const ADMIN_CHALLENGE = { "WWW-Authenticate": 'Bearer realm="emailsvc-admin"' };

/** Requires a valid `X-API-Key`; sets `ctx.state.auth`. */
export function requireApiKey(authenticator: ApiKeyAuthenticator): Middleware<GatewayState> {
  return async (ctx, next) => {
    const presented = ctx.get("x-api-key");
    if (!presented) {
      throw new Problem(401, "missing_api_key", "Send your API key in the X-API-Key header.", { headers: API_KEY_CHALLENGE });
    }
    const identity = await authenticator.authenticate(presented);
    if (!identity) {
      throw new Problem(401, "invalid_api_key", "The API key is not valid or has been revoked.", { headers: API_KEY_CHALLENGE });
    }
    ctx.state.auth = identity;
    await next();
  };
}

/** Requires `Authorization: Bearer <ADMIN_TOKEN>`. */
export function requireAdmin(verifier: AdminTokenVerifier): Middleware<GatewayState> {
  return async (ctx, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get("authorization"));
    if (!match) {
      throw new Problem(401, "missing_admin_token", "Send the admin token as `Authorization: Bearer <token>`.", {
        headers: ADMIN_CHALLENGE,
      });
    }
    if (!(await verifier.verify(match[1]!))) {
      throw new Problem(401, "invalid_admin_token", "The admin token is not valid.", { headers: ADMIN_CHALLENGE });
    }
    await next();
  };
}
