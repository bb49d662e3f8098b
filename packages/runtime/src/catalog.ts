// The gRPC services of the platform, from the service manifest
// (packages/manifest): the embedded launcher starts them, the gateway connects
// to them, each service alone reads its default ports from here, and their
// `<NAME>_URL` settings follow from their names. See ARCHITECTURE.md, "One
// service manifest".
import { SERVICES, SERVICE_NAMES, serviceUrlVariable, type ServiceName } from "@emailsvc/manifest";

export { SERVICE_NAMES, serviceUrlVariable, type ServiceName };

/** Each gRPC service's default ports when it runs alone (GRPC_PORT, METRICS_PORT). */
export const SERVICE_CATALOG = Object.fromEntries(
  SERVICE_NAMES.map((name) => [name, { grpcPort: SERVICES[name].grpcPort, metricsPort: SERVICES[name].metricsPort }]),
) as { readonly [N in ServiceName]: { readonly grpcPort: number; readonly metricsPort: number } };

/**
 * Default METRICS_PORT of the processes that are not gRPC services. Each
 * process has its own default so that all of them can run side by side on one
 * machine; in containers every one may use the same port.
 */
export const GATEWAY_METRICS_PORT = SERVICES.gateway.metricsPort;
/** Defaults of the public HTTP ports (GATEWAY_PORT, PORTAL_PORT). */
export const DEFAULT_GATEWAY_PORT = SERVICES.gateway.public.http.port;
export const DEFAULT_PORTAL_PORT = SERVICES.portal.public.http.port;
/** `npm start`'s one process (not a service of the manifest: it runs them all). */
export const EMBEDDED_METRICS_PORT = 9464;

/** Where a service listens when started alone on this machine with its default port. */
export function localServiceUrl(name: ServiceName): string {
  return `http://127.0.0.1:${SERVICE_CATALOG[name].grpcPort}`;
}
