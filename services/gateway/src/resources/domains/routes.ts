import { createClient } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { callOptions, requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor, rfc3339, rfc3339OrNull, stringOrNull } from "../../routes/json.js";
import type { ResourceContext } from "../resource.js";
import type { SenderDomainCreateBody } from "./schemas.js";

// /api/v1/domains: REST in, delivery's SenderDomainService out.

const STATUSES: Record<delivery.SenderDomainStatus, string> = {
  [delivery.SenderDomainStatus.UNSPECIFIED]: "pending",
  [delivery.SenderDomainStatus.PENDING]: "pending",
  [delivery.SenderDomainStatus.VERIFIED]: "verified",
  [delivery.SenderDomainStatus.FAILED]: "failed",
};

const RECORD_STATES: Record<delivery.DnsRecordState, string> = {
  [delivery.DnsRecordState.UNSPECIFIED]: "not_checked",
  [delivery.DnsRecordState.NOT_CHECKED]: "not_checked",
  [delivery.DnsRecordState.VERIFIED]: "verified",
  [delivery.DnsRecordState.MISSING]: "missing",
  [delivery.DnsRecordState.MISMATCH]: "mismatch",
};

export function senderDomainJson(d: delivery.SenderDomain | undefined) {
  if (!d) throw new Error("the service returned no sending domain");
  return {
    id: d.id,
    name: d.name,
    status: STATUSES[d.status],
    records: d.records.map((r) => ({ purpose: r.purpose, type: r.type, name: r.name, value: r.value, required: r.required, status: RECORD_STATES[r.state], found: r.found })),
    failure_reason: stringOrNull(d.failureReason),
    created_at: rfc3339(d.createdAt, "created_at"),
    verified_at: rfc3339OrNull(d.verifiedAt),
    last_checked_at: rfc3339OrNull(d.lastCheckedAt),
    next_check_at: rfc3339OrNull(d.nextCheckAt),
  };
}

export function senderDomainRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("delivery");
  const client = transport && createClient(delivery.SenderDomainService, transport);
  const service = () => requireClient(client, "delivery");
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/domains", "createSenderDomain", async (ctx) => {
    const body = ctx.state.body as SenderDomainCreateBody;
    const res = await service().createSenderDomain({ name: body.name }, callOptions(ctx, timeoutMs));
    ctx.status = 201;
    ctx.body = senderDomainJson(res.domain);
  });

  defineRoute(kit, "get", "/api/v1/domains", "listSenderDomains", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service().listSenderDomains({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.domains.map(senderDomainJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/domains/:id", "getSenderDomain", async (ctx) => {
    ctx.body = senderDomainJson((await service().getSenderDomain({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs))).domain);
  });

  defineRoute(kit, "delete", "/api/v1/domains/:id", "deleteSenderDomain", async (ctx) => {
    await service().deleteSenderDomain({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/domains/:id/verify", "verifySenderDomain", async (ctx) => {
    ctx.body = senderDomainJson((await service().verifySenderDomain({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs))).domain);
  });
}
