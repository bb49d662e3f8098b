import type { EventBus } from "@emailsvc/events";
import { AudienceService, imports, SubscriberService, SuppressionService, TagService } from "@emailsvc/proto";
import type { OutboxRelay } from "@emailsvc/outbox";
import { createServiceTransport, startServiceServer } from "@emailsvc/grpc";
import { grpcConfirmationMailer } from "./rpc/clients.js";
import { type Logger } from "@emailsvc/telemetry";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { DocumentStore } from "@emailsvc/storage";
import type { KeyRing } from "@emailsvc/tokens";
import { subscriberOutbox } from "./messaging/outbox.js";
import { topicsOf } from "@emailsvc/manifest";
import { subscriberRoutes } from "./rpc/services.js";
import { importRoutes } from "./rpc/imports.js";
import { ImportWorker } from "./messaging/import-worker.js";
import { DocumentSpool, FileSpool } from "./storage/import-spool.js";
import type { ImportDeps } from "./usecases/import-deps.js";
import { IMPORT_LIMITS } from "./domain/import.js";
import type { SubscriberDoc } from "./storage/documents.js";
import { SubscriberStorage } from "./storage/repositories.js";
import type { Deps } from "./usecases/deps.js";
import { expirePending } from "./usecases/expire-pending.js";
import type { SoftBouncePolicy } from "./usecases/record-delivery-problem.js";

export interface SubscribersServiceOptions {
  store: DocumentStore;
  bus: EventBus;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** SUPPRESSION_KEYS, loaded: the keys of the hashes that suppress erased addresses. */
  suppressionKeys: KeyRing;
  /** Soft bounces of one address that suppress it (default 3 in 30 days). */
  softBounces?: SoftBouncePolicy;
  /** Outbox sweep period; tests shorten it. */
  sweepIntervalMs?: number;
  sweepGraceMs?: number;
  /** How often unconfirmed pending subscribers past their deadline are looked for (default 60 s). */
  expirySweepIntervalMs?: number;
  /** The delivery and templates services, for double opt-in's confirmation mail (optional: none, no mail is sent). */
  deliveryUrl?: string;
  templatesUrl?: string;
  /** The shortest confirmation window an account may set (default 60 s; tests lower it). */
  minConfirmationExpirySeconds?: number;
  /** A pending subscriber's signup again resends the confirmation this long after the last (default 1 hour; tests shorten it). */
  confirmationResendAfterMs?: number;
  /** Bulk imports: where uploads are kept (a directory: files, the embedded store; unset: documents), the worker's lease. */
  imports?: { spoolDir?: string; leaseMs?: number; pollMs?: number; uploadSweepMs?: number; batchRows?: number; soleWorker?: boolean };
}

export interface RunningSubscribersService {
  url: string;
  port: number;
  relay: OutboxRelay<SubscriberDoc>;
  /** Drains: NOT_SERVING, in-flight calls finish, relay stops. Store and bus stay open (the caller owns them). */
  close(): Promise<void>;
}

export async function startSubscribersService(options: SubscribersServiceOptions): Promise<RunningSubscribersService> {
  const { store, bus, logger } = options;
  const storage = new SubscriberStorage(store);
  await Promise.all([storage.createIndexes(), bus.ensureTopics(topicsOf("subscribers"))]);

  const now = Date.now;
  const relay = subscriberOutbox({
    storage,
    bus,
    logger,
    clock: now,
    sweepIntervalMs: options.sweepIntervalMs,
    sweepGraceMs: options.sweepGraceMs,
    ...(options.deliveryUrl
      ? {
          confirmations: grpcConfirmationMailer({
            delivery: createServiceTransport(options.deliveryUrl),
            templates: options.templatesUrl ? createServiceTransport(options.templatesUrl) : undefined,
            logger,
          }),
        }
      : {}),
  });
  const deps: Deps = {
    relay,
    logger,
    now,
    suppressionKeys: options.suppressionKeys,
    ...(options.softBounces ? { softBounces: options.softBounces } : {}),
    ...(options.minConfirmationExpirySeconds !== undefined ? { minConfirmationExpirySeconds: options.minConfirmationExpirySeconds } : {}),
    ...(options.confirmationResendAfterMs !== undefined ? { confirmationResendAfterMs: options.confirmationResendAfterMs } : {}),
  };
  const importDeps: ImportDeps = {
    ...deps,
    relay,
    spool: options.imports?.spoolDir !== undefined ? new FileSpool(options.imports.spoolDir) : new DocumentSpool(),
    batchRows: options.imports?.batchRows ?? IMPORT_LIMITS.batchRows,
    wakeWorker: () => importWorker.wake(),
  };
  const importWorker = new ImportWorker({
    storage,
    deps: importDeps,
    logger,
    leaseMs: options.imports?.leaseMs,
    pollMs: options.imports?.pollMs,
    uploadSweepMs: options.imports?.uploadSweepMs,
    soleWorker: options.imports?.soleWorker,
  });
  const { server, health } = await startServiceServer({
    services: [SubscriberService, TagService, AudienceService, SuppressionService, imports.ImportService],
    routes: (router) => {
      const scopeOf = (call: CallContext) => ({ call, ...storage.forTenant(tenantKey(call.tenant)) });
      subscriberRoutes(deps, scopeOf)(router);
      importRoutes(importDeps, scopeOf)(router);
    },
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  relay.start();
  const expiry = startExpirySweep(deps, storage, options.expirySweepIntervalMs ?? 60_000);
  importWorker.start();
  logger.info({ url: server.url }, "subscribers service listening");

  return {
    url: server.url,
    port: server.port,
    relay,
    async close() {
      health.setDraining();
      await expiry.stop();
      await server.close();
      await importWorker.stop();
      await relay.stop();
    },
  };
}

/**
 * The expiry sweep of double opt-in (usecases/expire-pending.ts): one pass
 * per interval, never two at once; a failed pass is logged and the next one
 * tries again. Every instance runs it: each erasure is a guarded write, so
 * two instances erase a subscriber once.
 */
function startExpirySweep(deps: Deps, storage: SubscriberStorage, intervalMs: number): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const pass = () => {
    if (running) return;
    running = expirePending(deps, storage.expiredPending(), (tenant) => storage.forTenant(tenant))
      .then((erased) => {
        if (erased > 0) deps.logger.info({ erased }, "unconfirmed subscribers past their confirmation deadline erased");
      })
      .catch((err: unknown) => deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "expiry sweep failed; the next pass tries again"))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(pass, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
