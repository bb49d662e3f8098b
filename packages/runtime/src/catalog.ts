// Every gRPC service of the platform, in one list. The embedded launcher
// starts them from it, the gateway connects to them from it, each service
// alone reads its port from it, and their `<NAME>_URL` settings follow from
// it. Adding a service is its folder (services/<name>, exporting a
// ServiceModule) plus one entry here and one in embedded/src/services.ts,
// which the compiler asks for. See ARCHITECTURE.md, "Adding a service".

export const SERVICE_CATALOG = {
  subscribers: { grpcPort: 50051, metricsPort: 9461 },
  templates: { grpcPort: 50052, metricsPort: 9462 },
  delivery: { grpcPort: 50053, metricsPort: 9463 },
  campaigns: { grpcPort: 50054, metricsPort: 9465 },
  portal: { grpcPort: 50055, metricsPort: 9466 },
} as const satisfies Record<string, { grpcPort: number; metricsPort: number }>;

/**
 * Default METRICS_PORT of the processes that are not in the catalog. Each
 * process has its own default so that all of them can run side by side on one
 * machine; in containers every one may use the same port.
 */
export const GATEWAY_METRICS_PORT = 9460;
export const EMBEDDED_METRICS_PORT = 9464;

/** A service's one name: folder, package, database, consumer group, log field, Helm component. */
export type ServiceName = keyof typeof SERVICE_CATALOG;

export const SERVICE_NAMES = Object.keys(SERVICE_CATALOG) as ServiceName[];

/** The setting that says where a service is reached, e.g. `SUBSCRIBERS_URL`. */
export function serviceUrlVariable(name: ServiceName): string {
  return `${name.toUpperCase()}_URL`;
}

/** Where a service listens when started alone on this machine with its default port. */
export function localServiceUrl(name: ServiceName): string {
  return `http://127.0.0.1:${SERVICE_CATALOG[name].grpcPort}`;
}
