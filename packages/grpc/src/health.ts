import type { ConnectRouter } from "@connectrpc/connect";
import { health } from "@emailsvc/proto";

const { Health, HealthCheckResponse_ServingStatus: Status } = health;

/**
 * Health state of one process, served as grpc.health.v1. SERVING only while
 * the readiness check passes (e.g. the database answers) and the process is not
 * shutting down: a health check that always says SERVING would hide outages.
 */
export class HealthState {
  private draining = false;

  constructor(private readonly ready: () => Promise<boolean> = async () => true) {}

  /** Called at shutdown start so that load balancers stop sending new calls. */
  setDraining(): void {
    this.draining = true;
  }

  async serving(): Promise<boolean> {
    if (this.draining) return false;
    try {
      return await this.ready();
    } catch {
      return false;
    }
  }

  routes(serviceNames: string[]): (router: ConnectRouter) => void {
    const known = new Set(["", ...serviceNames]);
    const statusOf = async (service: string) => {
      if (!known.has(service)) return Status.SERVICE_UNKNOWN;
      return (await this.serving()) ? Status.SERVING : Status.NOT_SERVING;
    };
    return (router) =>
      router.service(Health, {
        check: async (req) => ({ status: await statusOf(req.service) }),
        // Sends the status now and whenever it changes, checking every 5 s.
        watch: async function* (req, ctx) {
          let last: number | undefined;
          while (!ctx.signal.aborted) {
            const status = await statusOf(req.service);
            if (status !== last) {
              last = status;
              yield { status };
            }
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, 5000);
              ctx.signal.addEventListener("abort", () => {
                clearTimeout(timer);
                resolve();
              });
            });
          }
        },
      });
  }
}
