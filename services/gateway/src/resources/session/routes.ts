import { Problem } from "../../http/problem.js";
import { rateLimited } from "../../http/rate-limit.js";
import type { GatewayRouterContext } from "../../http/state.js";
import { decoyHash, hashPassword, verifyPassword } from "../../members/passwords.js";
import { normalizeEmail, type Member } from "../../members/store.js";
import { requestAudit } from "../../routes/calls.js";
import { pickLocale } from "@emailsvc/text";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { clearSessionCookie, setSessionCookie } from "./cookie.js";
import { sessionJson } from "./mapping.js";
import type { PasswordResetCompleteBody, PasswordResetCreateBody, SessionCreateBody } from "./schemas.js";

const invalidCredentials = (headers: Record<string, string> = {}) =>
  new Problem("invalid_credentials", "The email address or the password is wrong.", { headers });

/** The links the dashboard's pages read their token from (after `#`: never sent to a server, nor in a Referer). */
export function dashboardLink(publicUrl: string, page: "accept" | "reset-password" | "setup", token: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/dashboard/${page}#token=${token}`;
}

/** Signs `member` in: a new session, its cookie, and the session's body (sign-in, an accepted invitation). */
export async function signIn(context: ResourceContext, ctx: GatewayRouterContext, member: Member) {
  const account = await context.accounts.getAccount(member.accountId);
  if (!account) throw invalidCredentials();
  const audit = requestAudit(ctx, "api", context.clientIp);
  const { session, token } = await context.members.createSession(member, { ip: audit.ip ?? "", userAgent: audit.userAgent ?? "" });
  setSessionCookie(ctx, context.cookie, token);
  ctx.set("Cache-Control", "no-store");
  return sessionJson(session, member, account);
}

export function sessionRoutes(kit: RouteKit, context: ResourceContext): void {
  const { members, accounts, sessions, cookie, limiter, authGuard } = context;

  defineRoute(kit, "post", "/api/v1/session", "createSession", async (ctx) => {
    const body = ctx.state.body as SessionCreateBody;
    const email = normalizeEmail(body.email);
    // A locked address or client is refused before the password is even looked at: guessing stops there.
    const locked = limiter?.signInLocked(email) ?? authGuard.locked(ctx);
    if (locked) throw rateLimited(locked);
    const member = await members.memberByEmail(email);
    // An unknown address costs the same scrypt as a wrong password.
    const matches = await verifyPassword(body.password, member?.passwordHash ?? (await decoyHash()));
    if (!member || !matches) {
      // A member's account learns of a failed sign-in to their address (an unknown address belongs to no account).
      if (member) ctx.state.auditActor = { type: "member", id: member.id, email: member.email, accountId: member.accountId };
      const limits = await authGuard.failed(ctx);
      const verdict = await limiter?.signInFailed(email);
      if (verdict && !verdict.allowed) throw rateLimited(verdict);
      throw invalidCredentials(limits);
    }
    ctx.status = 201;
    ctx.body = await signIn(context, ctx, member);
    ctx.state.auditActor = { type: "member", id: member.id, email: member.email, accountId: member.accountId };
  });

  defineRoute(kit, "get", "/api/v1/session", "getSession", async (ctx) => {
    const live = ctx.state.session!;
    const account = await accounts.getAccount(live.member.accountId);
    if (!account) throw new Problem("invalid_session", "The session's account no longer exists.");
    ctx.set("Cache-Control", "no-store");
    ctx.body = sessionJson(live.session, live.member, account);
  });

  defineRoute(kit, "delete", "/api/v1/session", "deleteSession", async (ctx) => {
    const live = ctx.state.session!;
    await members.deleteSession(live.session.id);
    sessions.forgetSession(live.session.id);
    clearSessionCookie(ctx, cookie);
    ctx.status = 204;
  });

  defineRoute(kit, "delete", "/api/v1/sessions", "deleteAllSessions", async (ctx) => {
    const live = ctx.state.session!;
    await members.deleteSessionsOf(live.member.id);
    sessions.forgetMember(live.member.id);
    clearSessionCookie(ctx, cookie);
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/password-resets", "createPasswordReset", async (ctx) => {
    const email = normalizeEmail((ctx.state.body as PasswordResetCreateBody).email);
    const verdict = await limiter?.admitPasswordReset(context.clientIp(ctx), email);
    if (verdict && !verdict.allowed) throw rateLimited(verdict);
    const member = await members.memberByEmail(email);
    if (member && context.mailer) {
      const mailer = context.mailer;
      const locale = pickLocale(undefined, undefined, ctx.get("accept-language"));
      // The reset is made and mailed after the answer: a member's answer takes no longer than anyone's.
      void (async () => {
        const { id, token } = await members.createPasswordReset(member.id);
        await mailer.passwordReset({ accountId: member.accountId, locale, to: member.email, url: dashboardLink(context.publicUrl, "reset-password", token), idempotencyKey: `password-reset:${id}` });
      })().catch((err: unknown) => context.logger.warn({ account_id: member.accountId, err: err instanceof Error ? err.message : String(err) }, "password reset not mailed"));
      ctx.state.auditActor = { type: "member", id: member.id, email: member.email, accountId: member.accountId };
    }
    ctx.status = 202;
    // An empty body (Koa would write the status text).
    ctx.body = "";
  });

  defineRoute(kit, "post", "/api/v1/password-resets/complete", "completePasswordReset", async (ctx) => {
    const body = ctx.state.body as PasswordResetCompleteBody;
    // Guessing tokens is guessing credentials: the client address's budget applies.
    const locked = authGuard.locked(ctx);
    if (locked) throw rateLimited(locked);
    const memberId = await members.takePasswordReset(body.token);
    if (!memberId) throw new Problem("invalid_token", invalidToken().detail, { headers: await authGuard.failed(ctx) });
    const member = await members.setPassword(memberId, await hashPassword(body.password));
    if (!member) throw invalidToken();
    // A new password ends every session: whoever knew the old one is out.
    await members.deleteSessionsOf(memberId);
    sessions.forgetMember(memberId);
    ctx.state.auditActor = { type: "member", id: member.id, email: member.email, accountId: member.accountId };
    ctx.status = 204;
  });
}

/** One answer for an unknown, used or expired link. */
export const invalidToken = () => new Problem("invalid_token", "The link is not valid: it is unknown, was used already, or has expired. Ask for a new one.");
