import type { HandlerContext } from "@connectrpc/connect";

// The tenant and the caller travel from the gateway to the services in request
// headers on the internal network (DESIGN.md, Tenancy). Services trust these
// headers because only the gateway can reach them (NetworkPolicy in the chart).
export const HEADER_ACCOUNT = "x-account-id";
export const HEADER_MODE = "x-key-mode";
export const HEADER_ACTOR = "x-actor";
export const HEADER_REQUEST_ID = "x-request-id";

export type KeyMode = "live" | "test";

export interface Tenant {
  accountId: string;
  mode: KeyMode;
}

export interface CallContext {
  tenant: Tenant;
  /** Who acts: "api_key:<key id>", "admin", "portal", "system". */
  actor: string;
  requestId: string;
}

/** One string per tenant, the first field of every stored document and index. */
export function tenantKey(tenant: Tenant): string {
  return `${tenant.accountId}:${tenant.mode}`;
}

/**
 * The tenant of a tenant key (what stored documents and events carry), for
 * work that acts for a tenant without a request: a mode other than `live`
 * reads as `test`, the one that can never reach a real recipient.
 */
export function tenantOfKey(key: string): Tenant {
  const [accountId = "", mode = ""] = key.split(":");
  return { accountId, mode: mode === "live" ? "live" : "test" };
}

export class MissingTenantError extends Error {}

const ACCOUNT_ID = /^acc_[0-9a-z]{26}$/;

/** Reads the call context; throws MissingTenantError when a header is absent or malformed. */
export function readCallContext(ctx: HandlerContext): CallContext {
  const accountId = ctx.requestHeader.get(HEADER_ACCOUNT) ?? "";
  const mode = ctx.requestHeader.get(HEADER_MODE) ?? "";
  if (!ACCOUNT_ID.test(accountId) || (mode !== "live" && mode !== "test")) {
    throw new MissingTenantError("the call carries no valid tenant");
  }
  return {
    tenant: { accountId, mode },
    actor: ctx.requestHeader.get(HEADER_ACTOR) || "system",
    requestId: ctx.requestHeader.get(HEADER_REQUEST_ID) || "",
  };
}

/** Headers to send with an internal call on behalf of `call`. */
export function callHeaders(call: CallContext): Record<string, string> {
  return {
    [HEADER_ACCOUNT]: call.tenant.accountId,
    [HEADER_MODE]: call.tenant.mode,
    [HEADER_ACTOR]: call.actor,
    [HEADER_REQUEST_ID]: call.requestId,
  };
}
