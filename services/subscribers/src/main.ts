import { openBus } from "@emailsvc/events";
import { createLogger, exitOnSignal } from "@emailsvc/runtime";
import { openStore } from "@emailsvc/storage";
import { loadConfig } from "./config.js";
import { startSubscribersService } from "./server.js";

// The subscribers service alone (containers, Kubernetes): config -> deps -> listen -> drain on SIGTERM.
async function main(): Promise<void> {
  const logger = createLogger("subscribers");
  const config = loadConfig();
  const store = await openStore({ mongoUrl: config.mongoUrl, dataDir: config.dataDir, dbName: config.mongoDb });
  const bus = await openBus({ brokers: config.kafkaBrokers, clientId: "subscribers", dataDir: config.dataDir });
  const service = await startSubscribersService({ store, bus, logger, port: config.grpcPort, host: config.grpcHost });
  exitOnSignal(logger, async () => {
    await service.close();
    await bus.close();
    await store.close();
  });
}

main().catch((err: unknown) => {
  console.error(JSON.stringify({ level: "fatal", service: "subscribers", msg: err instanceof Error ? err.message : String(err) }));
  process.exit(1);
});
