import type { EventBus } from "@emailsvc/events";
import type { Transport } from "@connectrpc/connect";
import { createServiceTransport, startServiceServer } from "@emailsvc/grpc";
import { recipientLookup } from "./rpc/clients.js";
import { topicsOf } from "@emailsvc/manifest";
import { webhooks } from "@emailsvc/proto";
import type { DocumentStore } from "@emailsvc/storage";
import type { Logger } from "@emailsvc/telemetry";
import type { KeyRing } from "@emailsvc/tokens";
import { AddressPolicy } from "./domain/address-policy.js";
import { DEFAULT_RETRY, type RetrySettings } from "./domain/retry.js";
import { postWebhook, systemResolver, type Resolver } from "./http/post.js";
import { subscribeWebhookEvents } from "./messaging/consumer.js";
import { WebhookSender } from "./messaging/sender.js";
import { webhookRoutes } from "./rpc/services.js";
import { WebhookStorage } from "./storage/repositories.js";
import { scopeOf, type Deps } from "./usecases/deps.js";
import { purgeDeliveryLog } from "./usecases/purge-delivery-log.js";
import type { WebhookPoster } from "./usecases/ports.js";

const DAY_MS = 24 * 60 * 60 * 1000;

export interface WebhooksServiceOptions {
  store: DocumentStore;
  /** Where the forwarded events come from. */
  bus: EventBus;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** SEALING_KEYS, loaded: endpoints' secrets are sealed under it. */
  sealingKeys: KeyRing;
  /** Plain http URLs allowed (default false: https only). */
  allowHttp?: boolean;
  /** CIDRs webhooks may reach although private or loopback (default none). */
  allowPrivateRanges?: readonly string[];
  /** Resolves endpoint hosts (default the system's; tests map names to their receiver). */
  resolver?: Resolver;
  /** The delivery service (its URL or a ready transport): the recipient's address in email events. Unset: `to` is null. */
  delivery?: string | Transport;
  /** Replaces the HTTP request (unit tests of the sender). */
  post?: WebhookPoster;
  /** An attempt's timeout (default 10 s). */
  timeoutMs?: number;
  retry?: RetrySettings;
  /** An endpoint whose every attempt failed this long is turned off (default 5 days). */
  disableAfterMs?: number;
  /** How often the sender looks for due retries (default 1 s). */
  senderIntervalMs?: number;
  /** How long an attempt holds its delivery (default 60 s; tests of a takeover shorten it). */
  leaseMs?: number;
  /** How long a finished delivery stays in its endpoint's log (default 30 days). */
  logRetentionMs?: number;
  /** Period of the log's retention sweep (default 1 hour; tests shorten it). */
  purgeIntervalMs?: number;
  /** Consumer group (default `webhooks`; tests sharing a Kafka use their own). */
  consumerGroup?: string;
  /** Clock (tests). */
  now?: () => number;
}

export interface RunningWebhooksService {
  url: string;
  port: number;
  /** Drains: NOT_SERVING, in-flight calls and attempts finish. The store and bus stay open (the caller owns them). */
  close(): Promise<void>;
}

export async function startWebhooksService(options: WebhooksServiceOptions): Promise<RunningWebhooksService> {
  const { store, logger } = options;
  const storage = new WebhookStorage(store);
  await Promise.all([storage.createIndexes(), options.bus.ensureTopics(topicsOf("webhooks"))]);
  const policy = new AddressPolicy(options.allowPrivateRanges ?? []);
  const deps: Deps = {
    sealingKeys: options.sealingKeys,
    urlRules: { allowHttp: options.allowHttp ?? false, policy },
    retry: options.retry ?? DEFAULT_RETRY,
    disableAfterMs: options.disableAfterMs ?? 5 * DAY_MS,
    secretOverlapMs: DAY_MS,
    logger,
    now: options.now ?? Date.now,
  };
  const post: WebhookPoster =
    options.post ??
    ((url, headers, body) => postWebhook({ policy, resolver: options.resolver ?? systemResolver, timeoutMs: options.timeoutMs ?? 10_000 }, url, headers, body));
  const tenants = { forTenant: (tenant: string) => storage.forTenant(tenant) };
  const sender = new WebhookSender(
    {
      ...deps,
      post,
      ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
      ...(options.delivery ? { recipients: recipientLookup(typeof options.delivery === "string" ? createServiceTransport(options.delivery) : options.delivery) } : {}),
    },
    storage.dueDeliveries(),
    tenants,
    options.senderIntervalMs,
  );
  deps.wake = () => sender.kick();

  const { server, health } = await startServiceServer({
    services: [webhooks.WebhookService],
    routes: webhookRoutes(deps, (call) => scopeOf(tenants.forTenant, call)),
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  let subscription;
  try {
    subscription = await subscribeWebhookEvents(options.bus, {
      ...(options.consumerGroup ? { group: options.consumerGroup } : {}),
      logger,
      tenants,
      now: deps.now,
      recorded: () => sender.kick(),
    });
  } catch (err) {
    await server.close(0);
    throw err;
  }
  sender.start();
  const retentionMs = options.logRetentionMs ?? 30 * DAY_MS;
  let sweeping: Promise<unknown> = Promise.resolve();
  const purgeTimer = setInterval(() => {
    sweeping = purgeDeliveryLog(storage.finishedDeliveries(), tenants.forTenant, deps.now() - retentionMs)
      .then((purged) => {
        if (purged > 0) logger.info({ purged }, "webhook deliveries past their retention deleted");
      })
      .catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, "webhook log retention sweep failed"));
  }, options.purgeIntervalMs ?? 60 * 60 * 1000);
  purgeTimer.unref();
  logger.info({ url: server.url, allow_http: deps.urlRules.allowHttp, allowed_private_ranges: policy.allowRanges.length }, "webhooks service listening");
  return {
    url: server.url,
    port: server.port,
    async close() {
      health.setDraining();
      await server.close();
      await subscription.stop();
      clearInterval(purgeTimer);
      await sender.stop();
      await sweeping;
    },
  };
}
