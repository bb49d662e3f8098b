import { openBus, type BusLogger, type EventBus } from "@emailsvc/events";
import {
  applyHeapSettings,
  ConfigError,
  envOptional,
  loadServiceEnv,
  localServiceUrl,
  serviceUrlVariable,
  type Env,
  type ServiceName,
} from "@emailsvc/runtime";
import { exitOnSignal } from "./shutdown.js";
import { createLogger, initTelemetry, startMetricsServer, telemetrySettings, type Logger } from "@emailsvc/telemetry";
import { openStore, redactUrl } from "@emailsvc/storage";
import type { ServiceModule } from "./module.js";

/**
 * The URLs of the services `module` calls, from `<NAME>_URL`. A required one
 * that is not set is assumed on this machine at its default port, as when
 * every service runs alone side by side; an optional one is left out.
 */
export function serviceUrls(module: Pick<ServiceModule, "calls">, env: Env = process.env): Partial<Record<ServiceName, string>> {
  const urls: Partial<Record<ServiceName, string>> = {};
  for (const [name, kind] of Object.entries(module.calls) as Array<[ServiceName, string]>) {
    const url = envOptional(serviceUrlVariable(name), env) ?? (kind === "required" ? localServiceUrl(name) : undefined);
    if (url === undefined) continue;
    if (!/^https?:\/\/[^/\s]+\/?$/.test(url)) {
      throw new ConfigError(`environment variable ${serviceUrlVariable(name)} must be a base URL like http://host:port, got "${url}"`);
    }
    urls[name] = url;
  }
  return urls;
}

/** Forwards the bus's warnings and errors to the service's logger. */
export function busLogger(logger: Logger): BusLogger {
  return (entry) => logger[entry.level]({ ...entry.fields, ns: entry.namespace }, entry.message);
}

/**
 * A service alone (containers, Kubernetes): settings → telemetry (tracing
 * when OTEL_EXPORTER_OTLP_ENDPOINT is set; /metrics on METRICS_PORT) → store →
 * bus → start → drain on SIGTERM (service, bus, store, then the last spans). A bad setting stops the
 * process with one line naming it.
 */
export function runService<Config>(module: ServiceModule<Config>, env: Env = process.env): void {
  const main = async (): Promise<void> => {
    applyHeapSettings();
    const logger = createLogger(module.name);
    const common = loadServiceEnv(module.name, env);
    const config = module.loadConfig(env);
    const urls = serviceUrls(module, env);
    const telemetry = initTelemetry(telemetrySettings(module.name, env));
    const metrics = await startMetricsServer({ port: common.metricsPort, host: common.metricsHost });
    logger.info({ metrics: metrics.url, tracing: telemetry.exporting ? "otlp" : "off" }, "telemetry");
    const store = await openStore({ mongoUrl: common.mongoUrl, dataDir: common.dataDir, dbName: common.mongoDb });
    logger.info({ store: common.mongoUrl ? redactUrl(common.mongoUrl) : `embedded:${common.dataDir}` }, "store open");
    let bus: EventBus | undefined;
    if (module.usesBus) {
      // Without Kafka: the durable embedded bus in DATA_DIR/bus/<service>.
      bus = await openBus({ brokers: common.kafkaBrokers, clientId: module.name, dataDir: common.dataDir, logger: busLogger(logger) });
    }
    const service = await module.start(
      { store, bus, logger, port: common.grpcPort, host: common.grpcHost, urls, dataDir: common.dataDir, embeddedStore: !common.mongoUrl, developmentSecretsDir: common.mongoUrl ? undefined : common.dataDir },
      config,
    );
    exitOnSignal(logger, async () => {
      await service.close();
      await bus?.close();
      await store.close();
      await metrics.close();
      await telemetry.shutdown();
    });
  };
  main().catch((err: unknown) => {
    // Before the logger exists, or a config error: one line, then exit.
    console.error(JSON.stringify({ level: "fatal", service: module.name, msg: err instanceof Error ? err.message : String(err) }));
    process.exit(1);
  });
}
