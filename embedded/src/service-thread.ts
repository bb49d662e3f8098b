// One service of `npm start` in a worker thread of its own (EMBEDDED_THREADS),
// so that the process uses a second core. The service runs exactly as it does
// on the main thread: its own store under DATA_DIR, real gRPC on loopback, and
// the process's one in-process bus reached through a MessagePort (or its own
// Kafka client). The main thread's side is ServiceThread in threads.ts.
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { openBus, PortEventBus, type EventBus } from "@emailsvc/events";
import { type Env, type ServiceName } from "@emailsvc/runtime";
import { createLogger, initTelemetry, metricsSnapshot, telemetrySettings } from "@emailsvc/telemetry";
import { busLogger, type RunningService } from "@emailsvc/service";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { serviceModule } from "./services.js";
import type { FromThread, ThreadData, ToThread } from "./thread-protocol.js";

const data = workerData as ThreadData;
const port = parentPort!;
const send = (message: FromThread) => port.postMessage(message);

async function start(): Promise<{ service: RunningService; bus: EventBus | undefined; store: DocumentStore; shutdownTelemetry: () => Promise<void> }> {
  const module = serviceModule(data.name as ServiceName);
  const env: Env = data.env;
  const telemetry = initTelemetry(telemetrySettings("emailsvc", env));
  // As the main thread's services log: the process's name, the service as component.
  const logger = createLogger("embedded").child({ component: module.name });
  const store = await openStore({ mongoUrl: data.mongoUrl, dataDir: data.dataDir, dbName: data.dbName });
  let bus: EventBus | undefined;
  try {
    if (module.usesBus) {
      bus = data.busPort
        ? new PortEventBus(data.busPort as MessagePort)
        : await openBus({
            brokers: data.kafkaBrokers,
            clientId: module.name,
            logger: busLogger(logger),
            ...(env.KAFKA_NAMESPACE ? { namespace: env.KAFKA_NAMESPACE } : {}),
          });
    }
    const service = await module.start(
      {
        store,
        bus,
        logger,
        port: data.port,
        host: "127.0.0.1",
        urls: data.urls,
        dataDir: data.dataDir,
        embeddedStore: !data.mongoUrl,
        developmentSecretsDir: data.dataDir,
      },
      module.loadConfig(env),
    );
    return { service, bus, store, shutdownTelemetry: () => telemetry.shutdown() };
  } catch (err) {
    await bus?.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
}

start().then(
  (running) => {
    port.on("message", (message: ToThread) => {
      if (message.kind === "metrics") {
        metricsSnapshot().then(
          (snapshot) => send({ kind: "metrics", id: message.id, snapshot }),
          () => send({ kind: "metrics", id: message.id, snapshot: [] }),
        );
      } else if (message.kind === "close") {
        // Drains as the main thread would: service, then bus, then store.
        void (async () => {
          await running.service.close();
          await running.bus?.close();
          await running.store.close();
          await running.shutdownTelemetry();
          send({ kind: "closed" });
          port.close();
          (data.busPort as MessagePort | undefined)?.close();
        })().catch((err: unknown) => send({ kind: "failed", error: err instanceof Error ? err.message : String(err) }));
      }
    });
    send({ kind: "started", url: running.service.url, publicUrl: running.service.publicUrl });
  },
  (err: unknown) => {
    send({ kind: "failed", error: err instanceof Error ? err.message : String(err) });
    port.close();
    (data.busPort as MessagePort | undefined)?.close();
  },
);
