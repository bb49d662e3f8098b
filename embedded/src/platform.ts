import { openBus, type EventBus } from "@emailsvc/events";
import { bootstrapDevelopment, startGateway } from "@emailsvc/gateway";
import { createLogger, type Logger } from "@emailsvc/runtime";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { startSubscribersService } from "@emailsvc/subscribers";

export interface PlatformOptions {
  dataDir: string;
  gatewayPort: number;
  gatewayHost?: string;
  mongoUrl?: string | undefined;
  kafkaBrokers?: string | undefined;
  adminToken?: string | undefined;
  logger?: Logger;
  /** Outbox sweep period of the services; tests shorten it. */
  sweepIntervalMs?: number;
  /** Prefix of every service's database name (tests use a fresh one per run). */
  dbPrefix?: string;
}

export interface RunningPlatform {
  gatewayUrl: string;
  subscribersUrl: string;
  /** Set on the first start without ADMIN_TOKEN: shown once, never again. */
  development?: { adminToken: string; testKey: string; accountId: string } | undefined;
  close(): Promise<void>;
}

/**
 * Starts every service in this process. Each service keeps its own database
 * (one store per service name) and they talk real gRPC over loopback, so the
 * code paths are those of the split deployment.
 */
export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const logger = options.logger ?? createLogger("embedded");
  const open = (name: string) => openStore({ mongoUrl: options.mongoUrl, dataDir: options.dataDir, dbName: `${options.dbPrefix ?? ""}${name}` });
  const stores: DocumentStore[] = [];
  const buses: EventBus[] = [];
  const closers: Array<() => Promise<void>> = [];
  try {
    const subscribersStore = await open("subscribers");
    stores.push(subscribersStore);
    const gatewayStore = await open("gateway");
    stores.push(gatewayStore);
    // The in-process bus is shared by every service in the process; with Kafka
    // each service gets its own client, as in the split deployment.
    const sharedBus = options.kafkaBrokers ? undefined : await openBus({ clientId: "embedded" });
    if (sharedBus) buses.push(sharedBus);
    const busFor = async (clientId: string) => {
      if (sharedBus) return sharedBus;
      const bus = await openBus({ brokers: options.kafkaBrokers, clientId });
      buses.push(bus);
      return bus;
    };

    const subscribers = await startSubscribersService({
      store: subscribersStore,
      bus: await busFor("subscribers"),
      logger: options.logger ? options.logger.child({ component: "subscribers" }) : createLogger("subscribers"),
      port: 0,
      ...(options.sweepIntervalMs !== undefined ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
    });
    closers.push(() => subscribers.close());

    const development = options.adminToken ? undefined : await bootstrapDevelopment(gatewayStore);
    const gateway = await startGateway({
      port: options.gatewayPort,
      host: options.gatewayHost ?? "0.0.0.0",
      store: gatewayStore,
      subscribersUrl: subscribers.url,
      logger: options.logger ? options.logger.child({ component: "gateway" }) : createLogger("gateway"),
      ...(options.adminToken ? { adminToken: options.adminToken } : {}),
    });
    closers.push(() => gateway.close());

    const stopAll = async () => {
      // Front door first, so nothing new arrives while the services drain.
      for (const close of closers.reverse()) await close();
      await Promise.all(buses.map((b) => b.close()));
      await Promise.all(stores.map((s) => s.close()));
    };
    return { gatewayUrl: gateway.url, subscribersUrl: subscribers.url, development, close: stopAll };
  } catch (err) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await Promise.all(buses.map((b) => b.close().catch(() => undefined)));
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    throw err;
  }
}
