// What the fakes of the services share: calls recorded with their headers,
// injected failures and delays, a grpc.health.v1 answer, and state kept per
// tenant (read from the call headers, as the real services do).

import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { health } from "@emailsvc/proto";
import { readCallContext, tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { RecordedCall } from "./fake-subscribers";

export abstract class FakeService<Tenant> {
  readonly calls: RecordedCall[] = [];
  /** Thrown by the next call (then cleared). */
  failNext: unknown;
  /** Delays every call (ms), to hold requests in flight. */
  delayMs = 0;
  /** What grpc.health.v1 answers. */
  serving = true;
  private readonly tenants = new Map<string, Tenant>();

  protected abstract newTenant(): Tenant;

  get lastCall(): RecordedCall | undefined {
    return this.calls[this.calls.length - 1];
  }

  /** Names of the methods called so far, in order. */
  methods(): string[] {
    return this.calls.map((c) => c.method);
  }

  protected tenant(key: string): Tenant {
    let tenant = this.tenants.get(key);
    if (!tenant) {
      tenant = this.newTenant();
      this.tenants.set(key, tenant);
    }
    return tenant;
  }

  protected allTenants(): Tenant[] {
    return [...this.tenants.values()];
  }

  /** Records the call, applies injected delay/failure, runs `work` in the caller's tenant. */
  protected async handle<T>(method: string, ctx: HandlerContext, work: (tenant: Tenant, call: CallContext, key: string) => T): Promise<T> {
    const call = readCallContext(ctx);
    this.calls.push({ method, context: call, headers: ctx.requestHeader, hasDeadline: ctx.timeoutMs() !== undefined, signal: ctx.signal });
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.failNext !== undefined) {
      const failure = this.failNext;
      this.failNext = undefined;
      throw failure;
    }
    const key = tenantKey(call.tenant);
    return work(this.tenant(key), call, key);
  }

  protected healthImpl(): Partial<ServiceImpl<typeof health.Health>> {
    return {
      check: async () => ({
        status: this.serving ? health.HealthCheckResponse_ServingStatus.SERVING : health.HealthCheckResponse_ServingStatus.NOT_SERVING,
      }),
      // eslint-disable-next-line require-yield
      watch: async function* () {
        throw new ConnectError("not implemented", Code.Unimplemented);
      },
    };
  }
}
