import { createClient, type CallOptions } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { Problem } from "../../http/problem.js";
import type { GatewayRouterContext } from "../../http/state.js";
import { callOptions, callOptionsAs, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { rfc3339, rfc3339OrNull, stringOrNull } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import type { CustomDomainSetBody } from "./schemas.js";

// Custom portal domains: REST in, the portal's DomainService out. The gateway
// owns accounts and plans, so the plan is checked here (the portal does not
// know plans); the domain's rules (apex, IP, wildcard, ours, taken) are the
// portal's.

export const REQUIRED_PLAN = "professional";

const STATES: Record<portal.CustomDomainState, string> = {
  [portal.CustomDomainState.UNSPECIFIED]: "pending_dns",
  [portal.CustomDomainState.PENDING_DNS]: "pending_dns",
  [portal.CustomDomainState.ISSUING]: "issuing",
  [portal.CustomDomainState.ACTIVE]: "active",
  [portal.CustomDomainState.FAILED]: "failed",
};

export function customDomainJson(d: portal.CustomDomain | undefined) {
  if (!d) throw new Error("the service returned no custom domain");
  const state = STATES[d.state];
  return {
    domain: d.domain,
    state,
    dns_record: { name: d.dnsRecord?.name ?? d.domain, type: "CNAME", target: d.dnsRecord?.target ?? "" },
    reason: stringOrNull(d.reason),
    url: state === "active" ? `https://${d.domain}/preferences` : null,
    last_check_at: rfc3339OrNull(d.lastCheckAt),
    next_check_at: rfc3339OrNull(d.nextCheckAt),
    created_at: rfc3339(d.createdAt, "created_at"),
    updated_at: rfc3339(d.updatedAt, "updated_at"),
    activated_at: rfc3339OrNull(d.activatedAt),
  };
}

export function customDomainRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("portal");
  const client = transport && createClient(portal.DomainService, transport);
  const service = () => requireClient(client, "portal");
  const { timeoutMs, accounts } = context;

  /** 404 for an unknown account (admin), 403 `plan_required` for one whose plan lacks custom domains. */
  async function requirePlan(accountId: string): Promise<void> {
    const account = await accounts.getAccount(accountId);
    if (!account) throw new Problem("not_found", "The account does not exist.");
    if (account.plan !== REQUIRED_PLAN) {
      throw new Problem(
        "plan_required",
        `Custom domains need the ${REQUIRED_PLAN} plan; this account is on the ${account.plan} plan. Upgrade to ${REQUIRED_PLAN} to use one.`,
      );
    }
  }

  /** A change of what real subscribers see needs a live-mode key (a test key only reads). */
  function requireLiveKey(ctx: GatewayRouterContext): void {
    if (ctx.state.auth?.mode !== "live") {
      throw new Problem("live_key_required", "Changing the custom domain needs a live-mode API key (sk_live_…): it changes the links every subscriber gets. A test key may read it.");
    }
  }

  /** The admin acts on any account, as that account (the domain is per account; the mode header is required but unused). */
  async function asAccount(ctx: GatewayRouterContext): Promise<{ accountId: string; options: CallOptions }> {
    const accountId = ctx.params.id ?? "";
    if (!(await accounts.getAccount(accountId))) throw new Problem("not_found", "The account does not exist.");
    return { accountId, options: callOptionsAs(ctx, { tenant: { accountId, mode: "live" }, actor: "admin", requestId: ctx.state.requestId }, timeoutMs) };
  }

  const path = "/api/v1/settings/preference-center/custom-domain";

  defineRoute(kit, "get", path, "getCustomDomain", async (ctx) => {
    ctx.body = customDomainJson((await service().getCustomDomain({}, callOptions(ctx, timeoutMs))).customDomain);
  });

  defineRoute(kit, "put", path, "setCustomDomain", async (ctx) => {
    requireLiveKey(ctx);
    await requirePlan(ctx.state.auth!.accountId);
    const body = ctx.state.body as CustomDomainSetBody;
    ctx.body = customDomainJson((await service().setCustomDomain({ domain: body.domain }, callOptions(ctx, timeoutMs))).customDomain);
  });

  defineRoute(kit, "delete", path, "deleteCustomDomain", async (ctx) => {
    requireLiveKey(ctx);
    await service().deleteCustomDomain({}, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  const adminPath = "/admin/v1/accounts/:id/custom-domain";

  defineRoute(kit, "get", adminPath, "getAccountCustomDomain", async (ctx) => {
    const { options } = await asAccount(ctx);
    ctx.body = customDomainJson((await service().getCustomDomain({}, options)).customDomain);
  });

  defineRoute(kit, "put", adminPath, "setAccountCustomDomain", async (ctx) => {
    const { accountId, options } = await asAccount(ctx);
    await requirePlan(accountId);
    const body = ctx.state.body as CustomDomainSetBody;
    ctx.body = customDomainJson((await service().setCustomDomain({ domain: body.domain }, options)).customDomain);
  });

  defineRoute(kit, "delete", adminPath, "deleteAccountCustomDomain", async (ctx) => {
    const { options } = await asAccount(ctx);
    await service().deleteCustomDomain({}, options);
    ctx.status = 204;
  });
}
