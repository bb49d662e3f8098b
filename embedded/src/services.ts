import { campaignsService } from "@emailsvc/campaigns";
import { deliveryService } from "@emailsvc/delivery";
import { portalService } from "@emailsvc/portal";
import { ConfigError, type Env, type ServiceName } from "@emailsvc/runtime";
import type { ServiceModule } from "@emailsvc/service";
import { subscribersService } from "@emailsvc/subscribers";
import { templatesService } from "@emailsvc/templates";

/**
 * The module of every service of the catalog (packages/runtime, catalog.ts):
 * a service missing here is a compile error. `npm start` starts them in the
 * order their calls need.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each module has its own config type
export const SERVICE_MODULES: { readonly [N in ServiceName]: ServiceModule<any> } = {
  subscribers: subscribersService,
  templates: templatesService,
  delivery: deliveryService,
  campaigns: campaignsService,
  portal: portalService,
};

/**
 * Services in an order where each one starts after every service it calls as
 * `required`. Optional calls do not order the start (delivery calls the
 * portal optionally, the portal calls delivery as required): the launcher
 * gives such a caller the callee's address before the callee listens.
 */
export function startOrder(modules: Readonly<Record<ServiceName, Pick<ServiceModule, "calls">>>): ServiceName[] {
  const order: ServiceName[] = [];
  const state = new Map<ServiceName, "visiting" | "done">();
  const visit = (name: ServiceName, path: ServiceName[]): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") throw new Error(`services call each other in a cycle: ${[...path, name].join(" -> ")}`);
    state.set(name, "visiting");
    for (const [callee, kind] of Object.entries(modules[name].calls) as Array<[ServiceName, string]>) {
      if (kind === "required") visit(callee, [...path, name]);
    }
    state.set(name, "done");
    order.push(name);
  };
  for (const name of Object.keys(modules) as ServiceName[]) visit(name, []);
  return order;
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
    if (!Object.prototype.hasOwnProperty.call(SERVICE_MODULES, name)) {
      throw new ConfigError(`EMBEDDED_THREADS: "${name}" is not a service (${Object.keys(SERVICE_MODULES).join(", ")}, or none)`);
    }
  }
  return [...new Set(names)] as ServiceName[];
}
