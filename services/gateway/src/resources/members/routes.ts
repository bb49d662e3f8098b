import { Problem } from "../../http/problem.js";
import { rateLimited } from "../../http/rate-limit.js";
import type { GatewayRouterContext } from "../../http/state.js";
import { hashPassword } from "../../members/passwords.js";
import type { Role } from "../../members/roles.js";
import { pickLocale, type Locale } from "@emailsvc/text";
import { InvalidCursorError, MemberEmailTakenError, type Invitation, type Member } from "../../members/store.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { InvalidAuditCursorError } from "../../members/audit.js";
import type { ResourceContext } from "../resource.js";
import { dashboardLink, invalidToken, signIn } from "../session/routes.js";
import { invitationJson, memberJson } from "./mapping.js";
import type { InvitationAcceptBody, InvitationCreateBody, MemberUpdateBody } from "./schemas.js";

const memberExists = () => new Problem("member_exists", "This email address is a member already (an address can be a member of one account only).");
const onlyOwner = () => new Problem("role_forbidden", "Only an owner may make, change or remove an owner.");
const lastOwner = () => new Problem("last_owner", "The account would have no owner left: make another member owner first.");

/** Store errors that are the caller's fault, as problems. */
async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof InvalidCursorError) {
      throw new Problem("validation_failed", "The cursor is not valid.", { errors: [{ field: "cursor", message: "is not a cursor of this list" }] });
    }
    throw err;
  }
}

/**
 * Makes an invitation and mails its link; returns it with the link (which
 * only the operator's answer ever shows, once). Without a mailer (no delivery
 * service) the invitation is made and not mailed.
 */
export async function inviteMember(
  context: ResourceContext,
  input: { accountId: string; email: string | null; role: Role; invitedBy: string | null; locale: Locale },
): Promise<{ invitation: Invitation; url: string }> {
  if (input.email !== null && (await context.members.memberByEmail(input.email))) throw memberExists();
  const { invitation, token } = await context.members.createInvitation(input);
  const url = dashboardLink(context.publicUrl, invitation.email === null ? "setup" : "accept", token);
  if (invitation.email !== null && context.mailer) {
    const account = await context.accounts.getAccount(input.accountId);
    await context.mailer.invitation({ accountId: input.accountId, locale: input.locale, to: invitation.email, url, idempotencyKey: `invitation:${invitation.id}`, accountName: account?.name ?? "", role: invitation.role });
  }
  return { invitation, url };
}

export function membersRoutes(kit: RouteKit, context: ResourceContext): void {
  const { members, accounts, sessions } = context;
  const caller = (ctx: GatewayRouterContext) => ctx.state.session!.member;

  /** An admin may not touch an owner, nor make one: only an owner may. */
  const mayTouch = (actor: Member, role: Role) => {
    if (role === "owner" && actor.role !== "owner") throw onlyOwner();
  };

  defineRoute(kit, "get", "/api/v1/audit-log", "listAuditLog", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    let page;
    try {
      page = await context.audit.list(ctx.state.auth!.accountId, query.limit, query.cursor);
    } catch (err) {
      if (err instanceof InvalidAuditCursorError) throw new Problem("validation_failed", "The cursor is not valid.", { errors: [{ field: "cursor", message: "is not a cursor of this list" }] });
      throw err;
    }
    ctx.body = { items: page.items.map(({ accountId: _account, ...entry }) => entry), next_cursor: page.nextCursor };
  });

  defineRoute(kit, "get", "/api/v1/account", "getMemberAccount", async (ctx) => {
    const member = caller(ctx);
    const account = await accounts.getAccount(member.accountId);
    if (!account) throw new Problem("invalid_session", "The session's account no longer exists.");
    ctx.body = { id: account.id, name: account.name, plan: account.plan, member: memberJson(member) };
  });

  defineRoute(kit, "get", "/api/v1/members", "listMembers", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const page = await translated(() => members.listMembers(caller(ctx).accountId, query.limit, query.cursor));
    ctx.body = { items: page.items.map(memberJson), next_cursor: page.nextCursor };
  });

  defineRoute(kit, "patch", "/api/v1/members/:id", "updateMember", async (ctx) => {
    const actor = caller(ctx);
    const role = (ctx.state.body as MemberUpdateBody).role;
    const target = await members.getMember(actor.accountId, ctx.params.id ?? "");
    if (!target) throw new Problem("not_found", "The account has no such member.");
    mayTouch(actor, target.role);
    mayTouch(actor, role);
    if (target.role === "owner" && role !== "owner" && (await members.countOwners(actor.accountId)) <= 1) throw lastOwner();
    const updated = await members.setRole(actor.accountId, target.id, role);
    if (!updated) throw new Problem("not_found", "The account has no such member.");
    // Their sessions see the new role on their next request.
    sessions.forgetMember(target.id);
    ctx.body = memberJson(updated);
  });

  defineRoute(kit, "delete", "/api/v1/members/:id", "deleteMember", async (ctx) => {
    const actor = caller(ctx);
    const target = await members.getMember(actor.accountId, ctx.params.id ?? "");
    if (!target) throw new Problem("not_found", "The account has no such member.");
    mayTouch(actor, target.role);
    if (target.role === "owner" && (await members.countOwners(actor.accountId)) <= 1) throw lastOwner();
    await members.removeMember(actor.accountId, target.id);
    // Their sessions die at once here, within 2 s on other gateway instances.
    sessions.forgetMember(target.id);
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/invitations", "createInvitation", async (ctx) => {
    const actor = caller(ctx);
    const body = ctx.state.body as InvitationCreateBody;
    mayTouch(actor, body.role);
    const { invitation } = await inviteMember(context, { accountId: actor.accountId, email: body.email, role: body.role, invitedBy: actor.id, locale: pickLocale(undefined, undefined, ctx.get("accept-language")) });
    ctx.status = 201;
    ctx.body = invitationJson(invitation);
  });

  defineRoute(kit, "get", "/api/v1/invitations", "listInvitations", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const page = await translated(() => members.listInvitations(caller(ctx).accountId, query.limit, query.cursor));
    ctx.body = { items: page.items.map(invitationJson), next_cursor: page.nextCursor };
  });

  defineRoute(kit, "delete", "/api/v1/invitations/:id", "deleteInvitation", async (ctx) => {
    if (!(await members.deleteInvitation(caller(ctx).accountId, ctx.params.id ?? ""))) throw new Problem("not_found", "The account has no such open invitation.");
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/invitations/accept", "acceptInvitation", async (ctx) => {
    const body = ctx.state.body as InvitationAcceptBody;
    // Guessing tokens is guessing credentials: the client address's budget applies.
    const locked = context.authGuard.locked(ctx);
    if (locked) throw rateLimited(locked);
    const invitation = await members.openInvitation(body.token);
    if (!invitation) {
      const limits = await context.authGuard.failed(ctx);
      throw new Problem("invalid_token", invalidToken().detail, { headers: limits });
    }
    const email = invitation.email ?? body.email;
    if (!email) throw new Problem("validation_failed", "The setup invitation needs the new member's email address.", { errors: [{ field: "email", message: "is required for the setup invitation" }] });
    if (await members.memberByEmail(email)) throw memberExists();
    const passwordHash = await hashPassword(body.password);
    // One use: whoever takes it first; a second request with the same link is refused.
    if (!(await members.takeInvitation(invitation.id))) throw invalidToken();
    let member: Member;
    try {
      member = await members.createMember({ accountId: invitation.accountId, email, name: body.name, role: invitation.role, passwordHash });
    } catch (err) {
      // The link works again: nothing was made.
      await members.releaseInvitation(invitation.id);
      if (err instanceof MemberEmailTakenError) throw memberExists();
      throw err;
    }
    ctx.state.auditActor = { type: "member", id: member.id, email: member.email, accountId: member.accountId };
    ctx.status = 201;
    ctx.body = await signIn(context, ctx, member);
  });
}
