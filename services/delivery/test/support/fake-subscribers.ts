import { create, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { SubscriberSchema, SubscriberService } from "@emailsvc/proto";
import { newId, readCallContext, startGrpcServer, tenantKey, type CallContext, type RunningGrpcServer } from "@emailsvc/runtime";

// A fake SubscriberService (the neighbour delivery looks recipients up in),
// served over real gRPC so that the tenant headers delivery sends are read as
// the real service reads them. Only GetSubscriberByEmail is implemented.

export class FakeSubscribers {
  private server: RunningGrpcServer | undefined;
  /** tenant -> lower-cased address -> subscriber */
  private readonly byTenant = new Map<string, Map<string, { id: string; email: string; metadata: JsonObject }>>();
  /** Every lookup: tenant and address. */
  readonly lookups: { tenant: string; email: string }[] = [];
  /** Lookups of these addresses (lower case) after their first one fail with UNAVAILABLE: queued at once, never sendable. */
  readonly unavailableAfterFirst = new Set<string>();

  get url(): string {
    return this.server!.url;
  }

  async start(): Promise<this> {
    this.server = await startGrpcServer({
      port: 0,
      routes: (router) =>
        router.service(SubscriberService, {
          getSubscriberByEmail: async (req, ctx) => {
            const tenant = tenantKey(readCallContext(ctx).tenant);
            const key = req.email.trim().toLowerCase();
            const earlier = this.lookups.filter((l) => l.tenant === tenant && l.email === key).length;
            this.lookups.push({ tenant, email: key });
            if (earlier > 0 && this.unavailableAfterFirst.has(key)) throw new ConnectError("down on purpose", Code.Unavailable);
            const found = this.byTenant.get(tenant)?.get(key);
            if (!found) throw new ConnectError("subscriber not found", Code.NotFound);
            return { subscriber: create(SubscriberSchema, { id: found.id, email: found.email, metadata: found.metadata }) };
          },
        }),
    });
    return this;
  }

  async close(): Promise<void> {
    await this.server?.close(0);
  }

  /** Makes `email` a subscriber of the caller's tenant; returns its id (`id` given: that one, e.g. the same id in two tenants). */
  put(call: CallContext, email: string, metadata: JsonObject = {}, id = newId("sub")): string {
    const tenant = tenantKey(call.tenant);
    const map = this.byTenant.get(tenant) ?? new Map();
    map.set(email.toLowerCase(), { id, email, metadata });
    this.byTenant.set(tenant, map);
    return id;
  }

  /** Deletes the subscriber (as the real service does before it publishes subscriber.deleted). */
  remove(call: CallContext, email: string): void {
    this.byTenant.get(tenantKey(call.tenant))?.delete(email.toLowerCase());
  }
}
