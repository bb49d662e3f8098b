import { openBus } from "@emailsvc/events";
import { createLogger, exitOnSignal } from "@emailsvc/runtime";
import { openStore } from "@emailsvc/storage";
import { loadConfig } from "./config.js";
import { describeSmtp } from "./providers/smtp.js";
import { startDeliveryService } from "./server.js";

// The delivery service alone (containers, Kubernetes): config -> deps -> listen -> drain on SIGTERM.
async function main(): Promise<void> {
  const logger = createLogger("delivery");
  const config = loadConfig();
  const store = await openStore({ mongoUrl: config.mongoUrl, dataDir: config.dataDir, dbName: config.mongoDb });
  const bus = await openBus({
    brokers: config.kafkaBrokers,
    clientId: "delivery",
    dataDir: config.dataDir,
    logger: (e) => logger[e.level]({ ...e.fields, ns: e.namespace }, e.message),
  });
  const service = await startDeliveryService({
    store,
    bus,
    logger,
    port: config.grpcPort,
    host: config.grpcHost,
    templatesUrl: config.templatesUrl,
    ...(config.subscribersUrl ? { subscribersUrl: config.subscribersUrl } : {}),
    provider: config.provider,
    ...(config.smtp ? { smtp: config.smtp } : {}),
    from: config.from,
  });
  if (config.provider === "smtp" && config.smtp) logger.info({ relay: describeSmtp(config.smtp) }, "sending live mail through SMTP");
  exitOnSignal(logger, async () => {
    await service.close();
    await bus.close();
    await store.close();
  });
}

main().catch((err: unknown) => {
  console.error(JSON.stringify({ level: "fatal", service: "delivery", msg: err instanceof Error ? err.message : String(err) }));
  process.exit(1);
});
