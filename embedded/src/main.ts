import { applyHeapSettings, DEFAULT_GATEWAY_PORT, EMBEDDED_HEAP_GROWING_PERCENT, EMBEDDED_METRICS_PORT, envInt, envOptional, envString } from "@emailsvc/runtime";
import { exitOnSignal } from "@emailsvc/service";
import { createLogger, initTelemetry, startMetricsServer, telemetrySettings } from "@emailsvc/telemetry";
import { adminTokenFromEnv } from "@emailsvc/gateway";
import { startPlatform } from "./platform.js";
import { threadedServices } from "./services.js";

// `npm start`: every service in one process, on embedded defaults unless
// MONGO_URL / KAFKA_BROKERS say otherwise.
async function main(): Promise<void> {
  // Before the service threads start: the setting is the process's, every thread's.
  applyHeapSettings(EMBEDDED_HEAP_GROWING_PERCENT);
  const logger = createLogger("embedded");
  // One process, one tracer provider and one metrics port for every service in it.
  const telemetry = initTelemetry(telemetrySettings("emailsvc"));
  const metrics = await startMetricsServer({
    port: envInt("METRICS_PORT", EMBEDDED_METRICS_PORT, { min: 0, max: 65535 }),
    host: envString("METRICS_HOST", "127.0.0.1"),
  });
  const gatewayPort = envInt("GATEWAY_PORT", DEFAULT_GATEWAY_PORT, { min: 0, max: 65535 });
  const platform = await startPlatform({
    dataDir: envString("DATA_DIR", "./data"),
    gatewayPort,
    gatewayHost: envString("GATEWAY_HOST", "127.0.0.1"),
    mongoUrl: envOptional("MONGO_URL"),
    kafkaBrokers: envOptional("KAFKA_BROKERS"),
    adminToken: adminTokenFromEnv(),
    tokenSigningKeys: envOptional("TOKEN_SIGNING_KEYS"),
    // Each service reads its own settings from here, as it does alone; links
    // in mail point at this gateway unless PUBLIC_API_URL says otherwise.
    env: { PUBLIC_API_URL: `http://localhost:${gatewayPort}`, ...process.env },
    logger,
    threads: threadedServices(process.env),
  });
  logger.info(
    { gateway: platform.gatewayUrl, portal: platform.portalUrl, metrics: metrics.url, tracing: telemetry.exporting ? "otlp" : "off", storage: process.env.MONGO_URL ? "mongodb" : "embedded", events: process.env.KAFKA_BROKERS ? "kafka" : "in-process (durable, DATA_DIR/bus/embedded)", email: process.env.EMAIL_PROVIDER ?? "sandbox" },
    "email platform started",
  );
  if (platform.development) {
    // Printed once, on the first start: neither secret is stored in clear anywhere.
    const { adminToken, testKey, accountId, setupUrl } = platform.development;
    process.stdout.write(
      [
        "",
        "  Development account created (shown once, keep these):",
        `    account id   ${accountId}`,
        `    test API key ${testKey}`,
        `    admin token  ${adminToken}`,
        "",
        `  Dashboard setup link: ${setupUrl}`,
        "    (one use, 7 days: choose the owner's email, name and password there)",
        "",
        "  Try it:",
        `    curl -s -X POST ${platform.gatewayUrl}/api/v1/subscribers \\`,
        `      -H 'X-API-Key: ${testKey}' -H 'Content-Type: application/json' \\`,
        `      -d '{"email":"ada@example.com","tags":["newsletter"]}'`,
        "",
      ].join("\n") + "\n",
    );
  }
  exitOnSignal(logger, async () => {
    await platform.close();
    await metrics.close();
    await telemetry.shutdown();
  });
}

main().catch((err: unknown) => {
  console.error(JSON.stringify({ level: "fatal", service: "embedded", msg: err instanceof Error ? err.message : String(err) }));
  process.exit(1);
});
