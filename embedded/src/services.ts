import { ConfigError, type Env, type ServiceName } from "@emailsvc/runtime";
import type { ServiceModule } from "@emailsvc/service";

// Each service's code is required when first asked for, not imported here: a
// worker thread then loads only its own service and what that service uses
// (delivery's thread neither MJML nor the gateway's WebAuthn), where importing
// all six cost each worker thread 14–20 MB of heap (bench/README.md, "Memory").
/* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use (above) */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each module has its own config type
const LOADERS: { readonly [N in ServiceName]: () => ServiceModule<any> } = {
  subscribers: () => (require("@emailsvc/subscribers") as typeof import("@emailsvc/subscribers")).subscribersService,
  templates: () => (require("@emailsvc/templates") as typeof import("@emailsvc/templates")).templatesService,
  delivery: () => (require("@emailsvc/delivery") as typeof import("@emailsvc/delivery")).deliveryService,
  campaigns: () => (require("@emailsvc/campaigns") as typeof import("@emailsvc/campaigns")).campaignsService,
  portal: () => (require("@emailsvc/portal") as typeof import("@emailsvc/portal")).portalService,
  webhooks: () => (require("@emailsvc/webhooks") as typeof import("@emailsvc/webhooks")).webhooksService,
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** The names of every gRPC service of the manifest (packages/manifest), in LOADERS' order. */
const SERVICE_MODULE_NAMES = Object.keys(LOADERS) as ServiceName[];

/**
 * The code of a gRPC service of the manifest: a service missing from LOADERS
 * is a compile error, and its module's name must be its key
 * (embedded/test/manifest.test.ts). `npm start` starts them in the manifest's
 * start order (`startOrder`: after what each calls as required).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each module has its own config type
export function serviceModule(name: ServiceName): ServiceModule<any> {
  return LOADERS[name]();
}

/**
 * Services `npm start` runs in worker threads by default: the two a campaign
 * keeps busy. On two cores this sends a campaign about 1.45 times as fast as
 * one thread for all (bench/README.md, "Campaign fan-out"); a thread for
 * every service was slower than these two, more threads than cores.
 */
export const DEFAULT_THREADED: readonly ServiceName[] = ["delivery", "campaigns"];

/**
 * EMBEDDED_THREADS: the services `npm start` runs each in a worker thread of
 * its own (comma-separated names, or "none"), the others sharing the main
 * thread; unset: DEFAULT_THREADED.
 */
export function threadedServices(env: Env): ServiceName[] {
  const raw = (env.EMBEDDED_THREADS ?? "").trim();
  if (raw === "") return [...DEFAULT_THREADED];
  if (raw === "none") return [];
  const names = raw.split(",").map((name) => name.trim());
  for (const name of names) {
    if (!Object.prototype.hasOwnProperty.call(LOADERS, name)) {
      throw new ConfigError(`EMBEDDED_THREADS: "${name}" is not a service (${SERVICE_MODULE_NAMES.join(", ")}, or none)`);
    }
  }
  return [...new Set(names)] as ServiceName[];
}
