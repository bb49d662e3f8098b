import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";
import type { AuditContextSchema } from "@emailsvc/proto";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import { Problem } from "../http/problem.js";
import { actorOf, type GatewayRouterContext } from "../http/state.js";

/**
 * Options of a service call made for this request: the tenant and the actor
 * from the API key or session and the request id travel in headers, the call is cancelled
 * when the client goes away, and it may not take longer than `timeoutMs`.
 */
export function callOptions(ctx: GatewayRouterContext, timeoutMs: number): CallOptions {
  const auth = ctx.state.auth;
  // Routes that call services with the caller's tenant require an API key (routes/define.ts).
  if (!auth) throw new Error("service call without an authenticated key");
  return callOptionsAs(
    ctx,
    { tenant: { accountId: auth.accountId, mode: auth.mode }, actor: actorOf(auth), requestId: ctx.state.requestId },
    timeoutMs,
  );
}

/**
 * Options of a service call on behalf of `call`, for routes whose credential
 * is not an API key (a signed link names the tenant and the actor).
 */
export function callOptionsAs(ctx: GatewayRouterContext, call: CallContext, timeoutMs: number): CallOptions {
  const controller = new AbortController();
  const res = ctx.res;
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return {
    headers: callHeaders(call),
    signal: controller.signal,
    timeoutMs,
  };
}

/**
 * The client of a service, or a 503 `service_unavailable` when this gateway
 * was started without that service (its URL is not configured).
 */
export function requireClient<T>(client: T | undefined, service: string): T {
  if (!client) {
    throw new Problem("service_unavailable", `This gateway is not connected to the ${service} service; retry later.`);
  }
  return client;
}

/** How a change reached the platform, as the audit trail records it (emailsvc.common.v1.AuditContext). */
export type AuditSource = "api" | "portal" | "one_click" | "import" | "form";

/** What the services keep of a user agent (longer ones are cut, control characters dropped). */
export const USER_AGENT_MAX = 512;

/**
 * The AuditContext of a request: its source, the client's IP address (as
 * `clientIp` trusts it) and its User-Agent, cut to what the services keep.
 */
export function requestAudit(ctx: GatewayRouterContext, source: AuditSource, clientIp: (ctx: GatewayRouterContext) => string): MessageInitShape<typeof AuditContextSchema> {
  // eslint-disable-next-line no-control-regex
  const userAgent = (ctx.get("user-agent") || "").replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, "").slice(0, USER_AGENT_MAX);
  return { source, ip: clientIp(ctx), userAgent };
}
