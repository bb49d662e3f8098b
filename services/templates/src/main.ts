import { createLogger, exitOnSignal } from "@emailsvc/runtime";
import { openStore } from "@emailsvc/storage";
import { defaultCompiler } from "./compile-pool.js";
import { loadConfig } from "./config.js";
import { startTemplatesService } from "./server.js";

// The templates service alone (containers, Kubernetes): config -> deps -> listen -> drain on SIGTERM.
async function main(): Promise<void> {
  const logger = createLogger("templates");
  const config = loadConfig();
  const store = await openStore({ mongoUrl: config.mongoUrl, dataDir: config.dataDir, dbName: config.mongoDb });
  const service = await startTemplatesService({
    store,
    logger,
    port: config.grpcPort,
    host: config.grpcHost,
    purgeAfterMs: config.purgeAfterDays * 24 * 60 * 60 * 1000,
    compiler: defaultCompiler(config.compileWorkers > 0 ? { size: config.compileWorkers } : {}),
  });
  exitOnSignal(logger, async () => {
    await service.close();
    await store.close();
  });
}

main().catch((err: unknown) => {
  console.error(JSON.stringify({ level: "fatal", service: "templates", msg: err instanceof Error ? err.message : String(err) }));
  process.exit(1);
});
