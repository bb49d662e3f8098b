import type { SessionCookie } from "../../http/auth.js";
import type { GatewayContext } from "../../http/state.js";
import { SESSION_ABSOLUTE_MS } from "../../members/store.js";

// The session cookie as the gateway writes it: HttpOnly (no script reads
// it), SameSite=Strict (no other site's page sends it), Path=/ (the
// dashboard and the API share the origin), Secure over https, where the
// name's `__Host-` prefix also pins it to this host.

function attributes(cookie: SessionCookie): string {
  return `Path=/; HttpOnly; SameSite=Strict${cookie.secure ? "; Secure" : ""}`;
}

export function setSessionCookie(ctx: GatewayContext, cookie: SessionCookie, token: string): void {
  ctx.set("Set-Cookie", `${cookie.name}=${token}; Max-Age=${SESSION_ABSOLUTE_MS / 1000}; ${attributes(cookie)}`);
}

export function clearSessionCookie(ctx: GatewayContext, cookie: SessionCookie): void {
  ctx.set("Set-Cookie", `${cookie.name}=; Max-Age=0; ${attributes(cookie)}`);
}
