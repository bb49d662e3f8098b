// The gateway alone (containers, Kubernetes): config -> store -> build ->
// listen -> graceful shutdown. `npm start` runs it inside the embedded launcher.
import { applyHeapSettings } from "@emailsvc/runtime";
import { exitOnSignal } from "@emailsvc/service";
import { createLogger, initTelemetry, startMetricsServer, telemetrySettings } from "@emailsvc/telemetry";
import { openStore, redactUrl } from "@emailsvc/storage";
import { loadConfig } from "./config.js";
import { startGateway } from "./server.js";

async function main(): Promise<void> {
  applyHeapSettings();
  const logger = createLogger("gateway");
  const config = loadConfig();
  const telemetry = initTelemetry(telemetrySettings("gateway"));
  const metrics = await startMetricsServer({ port: config.metricsPort, host: config.metricsHost });
  logger.info({ metrics: metrics.url, tracing: telemetry.exporting ? "otlp" : "off" }, "telemetry");
  const store = await openStore({ mongoUrl: config.mongoUrl, dataDir: config.dataDir, dbName: config.mongoDb });
  logger.info({ store: config.mongoUrl ? redactUrl(config.mongoUrl) : `embedded:${config.dataDir}` }, "store open");
  if (!config.adminToken) {
    logger.warn("ADMIN_TOKEN is not set: /admin/v1 accepts only a token stored by the development bootstrap");
  }
  const gateway = await startGateway({
    port: config.port,
    host: config.host,
    store,
    services: config.serviceUrls,
    logger,
    adminToken: config.adminToken,
    publicUrl: config.publicUrl,
    callTimeoutMs: config.callTimeoutMs,
    keyCache: { ttlMs: config.apiKeyCacheMs },
    tokenKeys: config.tokenKeys,
    preferenceLinks: config.preferenceLinks,
    rateLimit: config.rateLimit,
    auditRetentionDays: config.auditRetentionDays,
    // Behind a Service, clients (an ingress controller, other Pods) hold
    // keep-alive connections to this replica: during a rollout each gets one
    // more response, with Connection: close, before its connection ends
    // (helm upgrade under load: deploy/kube/test/helm.test.ts).
    idleConnectionGraceMs: 2_000,
  });
  exitOnSignal(logger, async () => {
    await gateway.close();
    await store.close();
    await metrics.close();
    await telemetry.shutdown();
  });
}

main().catch((err: unknown) => {
  // Before the logger exists or for config errors: one line, then exit.
  console.error(`gateway failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
