import { AccountNotFoundError, InvalidCursorError } from "../../accounts/store.js";
import { Problem } from "../../http/problem.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { accountJson, apiKeyJson, pageJson } from "./mapping.js";
import type { AccountCreateBody, AccountInvitationCreateBody, ApiKeyCreateBody } from "./schemas.js";
import type { Invitation } from "../../members/store.js";
import { inviteMember } from "../members/routes.js";
import { pickLocale } from "@emailsvc/text";

// The operator's API (/admin/v1, Authorization: Bearer <ADMIN_TOKEN>): the
// "dashboard" of the spec, for now. It talks to the gateway's own store only.

const accountNotFound = () => new Problem("not_found", "The account does not exist.");

/** Store errors that are the caller's fault, as problems. */
async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AccountNotFoundError) throw accountNotFound();
    if (err instanceof InvalidCursorError) {
      throw new Problem("validation_failed", "The cursor is not valid.", {
        errors: [{ field: "cursor", message: "is not a cursor of this list" }],
      });
    }
    throw err;
  }
}

const invitationJson = (invitation: Invitation, url: string) => ({ id: invitation.id, email: invitation.email ?? "", role: invitation.role, expires_at: invitation.expiresAt, url });

export function adminRoutes(kit: RouteKit, context: ResourceContext): void {
  const { accounts, authenticator } = context;
  defineRoute(kit, "post", "/admin/v1/accounts", "createAccount", async (ctx) => {
    const body = ctx.state.body as AccountCreateBody;
    // Refused before the account is made: an address is one member of one account.
    if (body.owner_email && (await context.members.memberByEmail(body.owner_email))) {
      throw new Problem("member_exists", "This email address is a member already (an address can be a member of one account only).");
    }
    const account = await accounts.createAccount({ name: body.name, plan: body.plan });
    ctx.state.auditAccount = account.id;
    ctx.status = 201;
    if (!body.owner_email) {
      ctx.body = accountJson(account);
      return;
    }
    const { invitation, url } = await inviteMember(context, { accountId: account.id, email: body.owner_email, role: "owner", invitedBy: null, locale: pickLocale(undefined, undefined, ctx.get("accept-language")) });
    ctx.set("Cache-Control", "no-store");
    ctx.body = { ...accountJson(account), owner_invitation: invitationJson(invitation, url) };
  });

  defineRoute(kit, "post", "/admin/v1/accounts/:id/invitations", "createAccountInvitation", async (ctx) => {
    const body = ctx.state.body as AccountInvitationCreateBody;
    const account = await accounts.getAccount(ctx.params.id ?? "");
    if (!account) throw accountNotFound();
    const { invitation, url } = await inviteMember(context, { accountId: account.id, email: body.email, role: body.role, invitedBy: null, locale: pickLocale(undefined, undefined, ctx.get("accept-language")) });
    ctx.status = 201;
    ctx.set("Cache-Control", "no-store");
    ctx.body = invitationJson(invitation, url);
  });

  defineRoute(kit, "get", "/admin/v1/accounts", "listAccounts", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    ctx.body = pageJson(await translated(() => accounts.listAccounts(query.limit, query.cursor)), accountJson);
  });

  defineRoute(kit, "get", "/admin/v1/accounts/:id", "getAccount", async (ctx) => {
    const account = await accounts.getAccount(ctx.params.id ?? "");
    if (!account) throw accountNotFound();
    ctx.body = accountJson(account);
  });

  defineRoute(kit, "post", "/admin/v1/accounts/:id/api-keys", "createApiKey", async (ctx) => {
    const body = ctx.state.body as ApiKeyCreateBody;
    const created = await translated(() => accounts.createApiKey(ctx.params.id ?? "", body));
    ctx.status = 201;
    // The only response that ever holds the full key.
    ctx.set("Cache-Control", "no-store");
    ctx.body = { ...apiKeyJson(created), key: created.key };
  });

  defineRoute(kit, "get", "/admin/v1/accounts/:id/api-keys", "listApiKeys", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const page = await translated(() => accounts.listApiKeys(ctx.params.id ?? "", query.limit, query.cursor));
    ctx.body = pageJson(page, apiKeyJson);
  });

  defineRoute(kit, "delete", "/admin/v1/accounts/:id/api-keys/:key_id", "revokeApiKey", async (ctx) => {
    const revoked = await accounts.revokeApiKey(ctx.params.id ?? "", ctx.params.key_id ?? "");
    if (!revoked) throw new Problem("not_found", "The account has no such API key.");
    // Refused from now on by this instance; other instances within their cache TTL.
    authenticator.forget(revoked.hash);
    ctx.body = apiKeyJson(revoked.key);
  });
}
