import { DeclaredTopicsEventBus, type EventBus, type Topic } from "@emailsvc/events";
import { callsOf, manifestOf, usesBus, type CallNeed, type ManifestTopic, type ServiceManifest } from "@emailsvc/manifest";
import type { Env, ServiceName } from "@emailsvc/runtime";
import type { Logger } from "@emailsvc/telemetry";
import type { DocumentStore } from "@emailsvc/storage";

// Every topic the manifest names is one of the registry's (packages/events,
// TOPICS): a misspelt or unregistered topic in an entry does not compile.
type UnregisteredTopic = Exclude<ManifestTopic, Topic>;
const manifestTopicsRegistered: [UnregisteredTopic] extends [never] ? true : UnregisteredTopic = true;
void manifestTopicsRegistered;

/** How a service depends on another one (its manifest's `calls`). */
export type CallKind = CallNeed;

/** What the skeleton (runService, or the embedded launcher) hands a service. */
export interface ServiceDeps {
  /** The service's own database. Owned by the caller: the service does not close it. */
  store: DocumentStore;
  /** The event bus; undefined for a service that declares `usesBus: false`. Owned by the caller. */
  bus: EventBus | undefined;
  logger: Logger;
  /** gRPC port; 0 picks a free one. */
  port: number;
  host: string;
  /** Base URLs of the services it calls: every required one, the optional ones that are configured. */
  urls: Partial<Record<ServiceName, string>>;
  /** DATA_DIR, for what the embedded mode keeps on disk beside the store. */
  dataDir: string;
  /** True when the store is the embedded file store (no MONGO_URL). */
  embeddedStore: boolean;
  /**
   * Where a development secret (e.g. a token signing key) may be generated and
   * kept when its variable is not set: DATA_DIR for a service alone on the
   * embedded store and for `npm start`; undefined on MongoDB, where secrets
   * must come from the environment (replicas must not each invent one).
   */
  developmentSecretsDir: string | undefined;
}

export interface RunningService {
  url: string;
  port: number;
  /** Base URL of what it serves over plain HTTP to the public, if anything (the portal's page). */
  publicUrl?: string | undefined;
  /** Drains (NOT_SERVING, calls and consumers finish); leaves store and bus open. */
  close(): Promise<void>;
}

/**
 * One service as the skeleton sees it. `services/<name>/src/service.ts`
 * exports one; its main.ts is `runService(module)`, and the embedded launcher
 * starts the same module in-process. What it declares comes from its manifest
 * (packages/manifest); the service's code adds only how it reads its settings
 * and how it starts.
 */
export interface ServiceModule<Config = unknown> {
  name: ServiceName;
  /** Its entry in the service manifest. */
  manifest: ServiceManifest;
  /** Opens the event bus for it (Kafka with KAFKA_BROKERS, else the embedded bus): it has topics. */
  usesBus: boolean;
  /** The services it calls, and whether it can start without them. */
  calls: Partial<Record<ServiceName, CallKind>>;
  /** Its own settings (beyond GRPC_*, MONGO_*, DATA_DIR, KAFKA_BROKERS and the URLs); throws ConfigError naming the variable. */
  loadConfig(env: Env): Config;
  /** Starts it; the bus it gets carries only the topics its manifest declares. */
  start(deps: ServiceDeps, config: Config): Promise<RunningService>;
}

/** What a service's code adds to its manifest. */
export interface ServiceCode<Config> {
  loadConfig(env: Env): Config;
  start(deps: ServiceDeps, config: Config): Promise<RunningService>;
}

/** The module of the manifest's service `name`, with its code; the config type is inferred. */
export function defineService<Config>(name: ServiceName, code: ServiceCode<Config>): ServiceModule<Config> {
  const manifest = manifestOf(name);
  const declared = { service: name, produces: manifest.topics.produces, consumes: manifest.topics.consumes };
  return {
    name,
    manifest,
    usesBus: usesBus(name),
    calls: callsOf(name),
    loadConfig: (env) => code.loadConfig(env),
    start: (deps, config) => code.start({ ...deps, bus: deps.bus && new DeclaredTopicsEventBus(deps.bus, declared) }, config),
  };
}
