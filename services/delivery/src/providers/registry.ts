import { SERVICES, type MailProviderName } from "@emailsvc/manifest";
import { ConfigError, envString, switchSetting, type Env } from "@emailsvc/runtime";
import { providerForTenant, SANDBOX_PROVIDER, type ProviderName } from "../domain/email.js";
import type { EmailProvider } from "../domain/provider.js";
import type { ProviderContext, ProviderDefinition } from "./definition.js";
import { sandboxProvider } from "./sandbox.js";
import { sesProvider } from "./ses.js";
import { smtpProvider } from "./smtp.js";
import { ThreadedProvider } from "./threaded.js";

// The providers delivery can send through, by name. EMAIL_PROVIDER picks the
// one of live-mode mail; test-mode mail always goes to `sandbox`. Their names
// and the secrets each reads are declared in delivery's manifest entry
// (packages/manifest/src/services.ts, `providers`), which the Helm chart
// follows (which EMAIL_PROVIDER it accepts, which secrets it asks for);
// PROVIDERS below is keyed by those names, so a provider declared without
// its definition, or defined without its declaration, does not compile.
// Adding a provider (an HTTP API, say) is one file that exports a
// ProviderDefinition (./definition.ts), its declaration in the manifest and
// its entry here (the checklist: services/delivery/README.md, "Adding a provider").

export type { ProviderContext, ProviderDefinition } from "./definition.js";

/** Every provider, by name: exactly the manifest's (SERVICES.delivery.providers). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each entry keeps its own settings type
const DEFINITIONS: { readonly [N in MailProviderName]: ProviderDefinition<any> } = {
  sandbox: sandboxProvider,
  smtp: smtpProvider,
  ses: sesProvider,
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each entry keeps its own settings type
export const PROVIDERS: ReadonlyMap<ProviderName, ProviderDefinition<any>> = new Map(Object.entries(DEFINITIONS));

/** A provider chosen and its settings read: what the service builds at start. */
export interface ConfiguredProvider {
  readonly name: ProviderName;
  /** Where it sends (no secrets), for the start log. */
  readonly description: string;
  build(context: ProviderContext): EmailProvider;
}

/**
 * The provider named `name`, with its settings read from `env`. Throws
 * ConfigError for an unknown name or a bad setting. A threadable one (smtp,
 * ses) runs in a sender thread of its own with DELIVERY_SENDER_THREAD=on. Off
 * by default: on two cores the thread gained nothing measurable and cost an
 * isolate's memory (about 120 MB at 20,000 recipients; bench/README.md, "The
 * wire"); it is for a machine with a spare core where delivery's thread,
 * which renders and writes the store, saturates.
 */
export function configureProvider(name: ProviderName, env: Env): ConfiguredProvider {
  const definition = PROVIDERS.get(name);
  if (!definition) throw new ConfigError(`EMAIL_PROVIDER must be one of ${[...PROVIDERS.keys()].join(", ")}, got "${name}"`);
  const settings: unknown = definition.settings(env);
  const threaded = definition.threadable === true && switchSetting(env, "DELIVERY_SENDER_THREAD", "off");
  return {
    name,
    description: definition.describe(settings),
    build: (context) => (threaded ? new ThreadedProvider({ name, settings, logger: context.logger }) : definition.build(settings, context)),
  };
}

/** The providers of one delivery process: the sandbox always (test mode), and EMAIL_PROVIDER's for live mail. */
export interface ProviderSetup {
  /** EMAIL_PROVIDER (default `sandbox`): where live-mode mail goes. */
  live: ConfiguredProvider;
  /** Where test-mode mail goes, whatever EMAIL_PROVIDER says. */
  sandbox: ConfiguredProvider;
}

/** Reads EMAIL_PROVIDER and the settings of the providers it needs. */
export function loadProviders(env: Env): ProviderSetup {
  const sandbox = configureProvider(SANDBOX_PROVIDER, env);
  const { setting, default: fallback } = SERVICES.delivery.providers;
  const name = envString(setting, fallback, env);
  return { sandbox, live: name === SANDBOX_PROVIDER ? sandbox : configureProvider(name, env) };
}

/** The built providers of a process, and which one an email's tenant goes through. */
export class Providers {
  private constructor(
    /** EMAIL_PROVIDER's name. */
    readonly liveName: ProviderName,
    private readonly byName: ReadonlyMap<ProviderName, EmailProvider>,
  ) {}

  static build(setup: ProviderSetup, context: ProviderContext): Providers {
    const built = new Map<ProviderName, EmailProvider>();
    for (const configured of [setup.sandbox, setup.live]) {
      if (!built.has(configured.name)) built.set(configured.name, configured.build(context));
    }
    return new Providers(setup.live.name, built);
  }

  /** The provider an email of this tenant goes through (test mode: the sandbox, see providerForTenant). */
  forTenant(tenant: string): EmailProvider {
    return this.byName.get(providerForTenant(tenant, this.liveName))!;
  }

  async close(): Promise<void> {
    await Promise.all([...this.byName.values()].map((p) => p.close()));
  }
}
