import type { Env } from "@emailsvc/runtime";
import type { Logger } from "@emailsvc/telemetry";
import type { ProviderName } from "../domain/email.js";
import type { EmailProvider } from "../domain/provider.js";
import type { DeliveryStorage } from "../storage/repositories.js";

// What a provider declares to be in the registry (registry.ts).

/** What a provider may use when it is built; it owns nothing else of delivery's. */
export interface ProviderContext {
  /** Delivery's store: the sandbox keeps its messages here; a provider with state of its own may too. */
  storage: DeliveryStorage;
  logger: Logger;
  now: () => number;
}

/**
 * One provider: its name, how it reads its settings from the environment
 * (failing fast, with a ConfigError naming the variable), and how it is built
 * from them. Settings are read at start, whether or not mail is sent yet, so a
 * bad value stops the service instead of failing every email.
 */
export interface ProviderDefinition<TSettings> {
  /** The EMAIL_PROVIDER value that picks it; also the email's `provider`. */
  readonly name: ProviderName;
  /** Its settings from the environment. Throws ConfigError naming the variable that is missing or wrong. */
  settings(env: Env): TSettings;
  /** Where it sends, for the start log line: never a password, key or token. */
  describe(settings: TSettings): string;
  build(settings: TSettings, context: ProviderContext): EmailProvider;
  /**
   * It may run in a sender thread of delivery's own (./threaded.ts,
   * DELIVERY_SENDER_THREAD): it needs nothing of the context but its logger
   * (no store), and its settings are plain data that can be posted.
   */
  readonly threadable?: boolean;
}

/** Declares a provider (a typed identity: settings stay the provider's own type). */
export function defineProvider<TSettings>(definition: ProviderDefinition<TSettings>): ProviderDefinition<TSettings> {
  return definition;
}
