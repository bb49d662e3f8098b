import type { ConnectRouter } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { errorInterceptor } from "@emailsvc/errors";
import { startGrpcServer, type RunningGrpcServer } from "./server.js";
import { HealthState } from "./health.js";
import type { Logger } from "@emailsvc/telemetry";
import { serverTelemetry } from "@emailsvc/telemetry";

export interface ServiceServerOptions {
  /** The services `routes` registers; grpc.health.v1 answers for each of them. */
  services: DescService[];
  routes: (router: ConnectRouter) => void;
  /** Readiness (e.g. the store answers); health says NOT_SERVING while false. */
  ready: () => Promise<boolean>;
  logger: Logger;
  port: number;
  host?: string | undefined;
}

export interface RunningServiceServer {
  server: RunningGrpcServer;
  health: HealthState;
}

/**
 * What every service's gRPC side is made of, in one place: its routes, the
 * standard health service, spans and metrics of every call, and the
 * interceptor that turns AppError into ConnectError (and hides everything
 * else behind Internal).
 */
export async function startServiceServer(options: ServiceServerOptions): Promise<RunningServiceServer> {
  const health = new HealthState(options.ready);
  const healthRoutes = health.routes(options.services.map((s) => s.typeName));
  const server = await startGrpcServer({
    port: options.port,
    ...(options.host ? { host: options.host } : {}),
    // Telemetry outermost: it sees the codes the error interceptor maps to, and
    // everything below (handlers, their logs, their calls) runs in its span.
    interceptors: [serverTelemetry(), errorInterceptor(options.logger)],
    routes: (router) => {
      options.routes(router);
      healthRoutes(router);
    },
  });
  return { server, health };
}
