import { openBus, type EventBus } from "@emailsvc/events";
import { bootstrapDevelopment, startGateway } from "@emailsvc/gateway";
import { createLogger, type Logger } from "@emailsvc/runtime";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { startDeliveryService } from "@emailsvc/delivery";
import { startSubscribersService } from "@emailsvc/subscribers";
import { startTemplatesService } from "@emailsvc/templates";
import { loadKeyRing, type KeyRing } from "@emailsvc/tokens";

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
  /** Outbox sweep period of the services; tests shorten it. */
  sweepIntervalMs?: number;
  /** Delivery's stalled-mail sweep: a queued email untouched this long is requested again (default 10 min; tests lengthen it). */
  stalledAfterMs?: number;
  /** Prefix of every service's database name (tests use a fresh one per run). */
  dbPrefix?: string;
  /** EMAIL_PROVIDER for live-mode keys: sandbox (default) or smtp. Test-mode keys always use the sandbox. */
  emailProvider?: "sandbox" | "smtp" | undefined;
  /** SMTP_URL, e.g. smtp://user:pass@relay:587 (needed for smtp). */
  smtpUrl?: string | undefined;
  /** EMAIL_FROM, e.g. `Acme <hello@acme.test>`. */
  emailFrom?: string | undefined;
}

export interface RunningPlatform {
  gatewayUrl: string;
  subscribersUrl: string;
  templatesUrl: string;
  deliveryUrl: string;
  /** The keys links are signed and verified with. */
  tokenKeys: KeyRing;
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
  // One key ring for the process: delivery signs unsubscribe links with it and
  // the gateway verifies them. TOKEN_SIGNING_KEYS when set, else a development
  // key kept under DATA_DIR (one process: no replicas to disagree).
  const tokenKeys = loadKeyRing({ value: options.tokenSigningKeys, developmentDir: options.dataDir });
  const stores: DocumentStore[] = [];
  const buses: EventBus[] = [];
  const closers: Array<() => Promise<void>> = [];
  try {
    const [subscribersStore, templatesStore, deliveryStore, gatewayStore] = await Promise.all(
      ["subscribers", "templates", "delivery", "gateway"].map(open),
    ).then((opened) => {
      stores.push(...opened);
      return opened as [DocumentStore, DocumentStore, DocumentStore, DocumentStore];
    });
    const loggerFor = (component: string) => (options.logger ? options.logger.child({ component }) : createLogger(component));
    // The in-process bus is shared by every service in the process, its log in
    // DATA_DIR/bus/embedded, so that queued events survive a restart; with
    // Kafka each service gets its own client, as in the split deployment.
    const busLog = loggerFor("events");
    const sharedBus = options.kafkaBrokers
      ? undefined
      : await openBus({ clientId: "embedded", dataDir: options.dataDir, logger: (e) => busLog[e.level]({ ...e.fields, ns: e.namespace }, e.message) });
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
      logger: loggerFor("subscribers"),
      port: 0,
      ...(options.sweepIntervalMs !== undefined ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
    });
    closers.push(() => subscribers.close());

    const templates = await startTemplatesService({ store: templatesStore, logger: loggerFor("templates"), port: 0 });
    closers.push(() => templates.close());

    const delivery = await startDeliveryService({
      store: deliveryStore,
      bus: await busFor("delivery"),
      logger: loggerFor("delivery"),
      port: 0,
      templatesUrl: templates.url,
      subscribersUrl: subscribers.url,
      ...(options.emailProvider ? { provider: options.emailProvider } : {}),
      ...(options.smtpUrl ? { smtp: options.smtpUrl } : {}),
      ...(options.emailFrom ? { from: options.emailFrom } : {}),
      ...(options.sweepIntervalMs !== undefined ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
      ...(options.stalledAfterMs !== undefined ? { stalledAfterMs: options.stalledAfterMs } : {}),
    });
    closers.push(() => delivery.close());

    const development = options.adminToken ? undefined : await bootstrapDevelopment(gatewayStore);
    const gateway = await startGateway({
      port: options.gatewayPort,
      host: options.gatewayHost ?? "0.0.0.0",
      store: gatewayStore,
      subscribersUrl: subscribers.url,
      templatesUrl: templates.url,
      deliveryUrl: delivery.url,
      logger: loggerFor("gateway"),
      ...(options.adminToken ? { adminToken: options.adminToken } : {}),
      tokenKeys,
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
      subscribersUrl: subscribers.url,
      templatesUrl: templates.url,
      deliveryUrl: delivery.url,
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
