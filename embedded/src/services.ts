import { campaignsService } from "@emailsvc/campaigns";
import { deliveryService } from "@emailsvc/delivery";
import { portalService } from "@emailsvc/portal";
import { ConfigError, type Env, type ServiceName } from "@emailsvc/runtime";
import type { ServiceModule } from "@emailsvc/service";
import { subscribersService } from "@emailsvc/subscribers";
import { templatesService } from "@emailsvc/templates";
import { webhooksService } from "@emailsvc/webhooks";

/**
 * The code of every gRPC service of the manifest (packages/manifest): a
 * service missing here is a compile error, and its module's name must be its
 * key (embedded/test/manifest.test.ts). `npm start` starts them in the
 * manifest's start order (`startOrder`: after what each calls as required).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each module has its own config type
export const SERVICE_MODULES: { readonly [N in ServiceName]: ServiceModule<any> } = {
  subscribers: subscribersService,
  templates: templatesService,
  delivery: deliveryService,
  campaigns: campaignsService,
  portal: portalService,
  webhooks: webhooksService,
};

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
