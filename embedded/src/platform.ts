import { busRetentionFromEnv, openBus, type EventBus } from "@emailsvc/events";
import { auditRetentionDaysFromEnv, bootstrapDevelopment, loadRateLimitConfig, startGateway } from "@emailsvc/gateway";
import { startOrder } from "@emailsvc/manifest";
import { unusedPort, type Env, type ServiceName } from "@emailsvc/runtime";
import { createLogger, type Logger } from "@emailsvc/telemetry";
import { busLogger, type RunningService } from "@emailsvc/service";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { loadKeyRing, loadPreferenceLinkSettings, type KeyRing } from "@emailsvc/tokens";
import { serviceModule } from "./services.js";
import { startServiceThread } from "./threads.js";

export interface PlatformOptions {
  dataDir: string;
  gatewayPort: number;
  gatewayHost?: string;
  mongoUrl?: string | undefined;
  kafkaBrokers?: string | undefined;
  adminToken?: string | undefined;
  /** TOKEN_SIGNING_KEYS; unset: a development key under dataDir. */
  tokenSigningKeys?: string | undefined;
  logger?: Logger;
  /** Prefix of every service's database name (tests use a fresh one per run). */
  dbPrefix?: string;
  /**
   * The services' own settings, as each reads them alone (EMAIL_PROVIDER,
   * SMTP_URL, EMAIL_FROM, OUTBOX_SWEEP_INTERVAL_MS, the gateway's and the
   * portal's RATE_LIMIT_* and TRUSTED_PROXY_HOPS, …; see README). `npm
   * start` passes the process's environment; default none (each default).
   */
  env?: Env;
  /**
   * Services to run each in a worker thread of its own (EMBEDDED_THREADS), so
   * that the process uses more than one core; the rest share the main
   * thread. Default none.
   */
  threads?: readonly ServiceName[];
  /** A service thread died on its own; default: log and end the process, as a crash of a lone service would. */
  onThreadCrash?: (name: ServiceName, error: Error) => void;
  /**
   * Tests only: changes a service's loaded settings before it starts, for
   * what no setting may hold (delivery's `sesCertificateFetcher`, standing in
   * for SNS's HTTPS). Not for a service in a thread (a function does not cross).
   */
  configOverrides?: Partial<Record<ServiceName, (config: never) => unknown>>;
}

export interface RunningPlatform {
  gatewayUrl: string;
  /** The portal page (PORTAL_PORT), e.g. http://localhost:8081. */
  portalUrl: string | undefined;
  /** Base URL of each service's gRPC API, on loopback. */
  serviceUrls: Record<ServiceName, string>;
  /** The keys links are signed and verified with. */
  tokenKeys: KeyRing;
  /** Set on the first start without ADMIN_TOKEN: shown once, never again. */
  development?: { adminToken: string; testKey: string; accountId: string; setupUrl: string } | undefined;
  close(): Promise<void>;
}

/**
 * Starts every service in this process. Each service keeps its own database
 * (one store per service name) and they talk real gRPC over loopback, so the
 * code paths are those of the split deployment.
 */
export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const open = (name: string) => openStore({ mongoUrl: options.mongoUrl, dataDir: options.dataDir, dbName: `${options.dbPrefix ?? ""}${name}` });
  // One key ring for the process: delivery signs unsubscribe links with it and
  // the gateway verifies them. TOKEN_SIGNING_KEYS when set, else a development
  // key kept under DATA_DIR (one process: no replicas to disagree).
  const tokenKeys = loadKeyRing({ value: options.tokenSigningKeys, developmentDir: options.dataDir });
  const stores: DocumentStore[] = [];
  const buses: EventBus[] = [];
  const closers: Array<() => Promise<void>> = [];
  try {
    const loggerFor = (component: string) => (options.logger ? options.logger.child({ component }) : createLogger(component));
    // The in-process bus is shared by every service in the process, its log in
    // DATA_DIR/bus/embedded, so that queued events survive a restart; with
    // Kafka each service gets its own client, as in the split deployment.
    const sharedBus = options.kafkaBrokers
      ? undefined
      : await openBus({ clientId: "embedded", dataDir: options.dataDir, logger: busLogger(loggerFor("events")), ...busRetentionFromEnv(options.env ?? {}) });
    if (sharedBus) buses.push(sharedBus);

    // Every setting is read before anything starts: a bad one stops the start at once.
    // TOKEN_SIGNING_KEYS of options wins for every service, as it does for the gateway.
    const env: Env = { ...(options.env ?? {}), ...(options.tokenSigningKeys ? { TOKEN_SIGNING_KEYS: options.tokenSigningKeys } : {}) };
    const order = startOrder();
    const configs = new Map(
      order.map((name) => {
        const loaded = serviceModule(name).loadConfig(env) as never;
        const override = options.configOverrides?.[name];
        if (override && options.threads?.includes(name)) throw new Error(`configOverrides of ${name}: not for a service in a thread`);
        return [name, override ? override(loaded) : (loaded as unknown)];
      }),
    );
    // The gateway's rate limits (RATE_LIMIT_*), as when it runs alone; the
    // shared store, when asked for, is the gateway's own MongoDB database.
    const rateLimit = loadRateLimitConfig({ ...env, MONGO_URL: options.mongoUrl });
    const serviceUrls = {} as Record<ServiceName, string>;
    const publicUrls: Partial<Record<ServiceName, string>> = {};
    const threaded = new Set(options.threads ?? []);
    // A service called optionally by one that starts before it (delivery -> portal) listens on a
    // port picked now, so that its caller can be given the address at start.
    const ports = new Map<ServiceName, number>();
    for (const [index, name] of order.entries()) {
      for (const [callee, kind] of Object.entries(serviceModule(name).calls) as Array<[ServiceName, string]>) {
        if (kind === "optional" && order.indexOf(callee) > index && !ports.has(callee)) {
          const port = await unusedPort();
          ports.set(callee, port);
          serviceUrls[callee] = `http://127.0.0.1:${port}`;
        }
      }
    }
    for (const name of order) {
      const module = serviceModule(name);
      const urls = Object.fromEntries(
        Object.keys(module.calls)
          .filter((callee) => serviceUrls[callee as ServiceName] !== undefined)
          .map((callee) => [callee, serviceUrls[callee as ServiceName]]),
      );
      if (threaded.has(name)) {
        const service = await startServiceThread({
          name,
          dataDir: options.dataDir,
          dbName: `${options.dbPrefix ?? ""}${name}`,
          mongoUrl: options.mongoUrl,
          kafkaBrokers: options.kafkaBrokers,
          sharedBus: module.usesBus ? sharedBus : undefined,
          port: ports.get(name) ?? 0,
          urls,
          env,
          onCrash:
            options.onThreadCrash !== undefined
              ? (error) => options.onThreadCrash!(name, error)
              : (error) => {
                  loggerFor(name).fatal({ err: error.message }, "service thread died; stopping the process");
                  process.exit(1);
                },
        });
        serviceUrls[name] = service.url;
        if (service.publicUrl) publicUrls[name] = service.publicUrl;
        closers.push(() => service.close());
        continue;
      }
      const store = await open(name);
      stores.push(store);
      let bus: EventBus | undefined = sharedBus;
      if (module.usesBus && !bus) {
        bus = await openBus({
          brokers: options.kafkaBrokers,
          clientId: name,
          logger: busLogger(loggerFor(name)),
          // KAFKA_NAMESPACE and EVENT_RETENTION_SECONDS of the services' settings (openBus falls back to the process's own).
          ...(env.KAFKA_NAMESPACE ? { namespace: env.KAFKA_NAMESPACE } : {}),
          ...busRetentionFromEnv(env),
        });
        buses.push(bus);
      }
      const service: RunningService = await module.start(
        {
          store,
          bus: module.usesBus ? bus : undefined,
          logger: loggerFor(name),
          port: ports.get(name) ?? 0,
          host: "127.0.0.1",
          urls,
          dataDir: options.dataDir,
          embeddedStore: !options.mongoUrl,
          // One process: its development key is the one the gateway verifies with (loaded above).
          developmentSecretsDir: options.dataDir,
        },
        configs.get(name),
      );
      serviceUrls[name] = service.url;
      if (service.publicUrl) publicUrls[name] = service.publicUrl;
      closers.push(() => service.close());
    }

    const gatewayStore = await open("gateway");
    stores.push(gatewayStore);
    const development = options.adminToken ? undefined : await bootstrapDevelopment(gatewayStore, env.PUBLIC_API_URL ? { publicUrl: env.PUBLIC_API_URL } : {});
    const gateway = await startGateway({
      port: options.gatewayPort,
      host: options.gatewayHost ?? "0.0.0.0",
      store: gatewayStore,
      services: serviceUrls,
      logger: loggerFor("gateway"),
      ...(env.PUBLIC_API_URL ? { publicUrl: env.PUBLIC_API_URL } : {}),
      ...(options.adminToken ? { adminToken: options.adminToken } : {}),
      tokenKeys,
      // As delivery mints them: PREFERENCES_URL, else this process's page at localhost:PORTAL_PORT.
      preferenceLinks: loadPreferenceLinkSettings(env),
      rateLimit,
      auditRetentionDays: auditRetentionDaysFromEnv(env),
    });
    closers.push(() => gateway.close());

    const stopAll = async () => {
      // Front door first, so nothing new arrives while the services drain.
      for (const close of closers.reverse()) await close();
      await Promise.all(buses.map((b) => b.close()));
      await Promise.all(stores.map((s) => s.close()));
    };
    return {
      gatewayUrl: gateway.url,
      portalUrl: publicUrls.portal,
      serviceUrls,
      tokenKeys,
      development,
      close: stopAll,
    };
  } catch (err) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await Promise.all(buses.map((b) => b.close().catch(() => undefined)));
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    throw err;
  }
}
