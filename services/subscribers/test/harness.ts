import { createClient, type Client } from "@connectrpc/connect";
import { InProcessEventBus, type EventBus, type ReceivedEvent } from "@emailsvc/events";
import { AudienceService, SubscriberService, SuppressionService, TagService } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { createLogger } from "@emailsvc/telemetry";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEmbeddedStore, type DocumentStore } from "@emailsvc/storage";
import { topicsOf } from "@emailsvc/manifest";
import { startSubscribersService, type RunningSubscribersService } from "../src/server.js";
import { openTestStore, type StoreKind } from "@emailsvc/testing";
import { generateKeyText, parseKeyRing, type KeyRing } from "@emailsvc/tokens";

// The kit's pieces every service's tests share (packages/testing, services.ts).
export { asCall as as, mongoUrl, testTenant as tenant, waitFor, type StoreKind } from "@emailsvc/testing";

export interface Harness {
  service: RunningSubscribersService;
  store: DocumentStore;
  /** The embedded store's directory (its datafiles); undefined on MongoDB. */
  dataDir: string | undefined;
  bus: EventBus;
  /** Every event the bus carried, in arrival order. */
  received: ReceivedEvent[];
  subscribers: Client<typeof SubscriberService>;
  tags: Client<typeof TagService>;
  audience: Client<typeof AudienceService>;
  suppressions: Client<typeof SuppressionService>;
  close(): Promise<void>;
}

/** The harness's SUPPRESSION_KEYS. */
export const SUPPRESSION_KEYS: KeyRing = parseKeyRing(generateKeyText("test"));

export interface HarnessOptions {
  softBounces?: { limit: number; windowMs: number };
  /** The double opt-in expiry sweep's period and the shortest window an account may set. */
  expirySweepIntervalMs?: number;
  minConfirmationExpirySeconds?: number;
  confirmationResendAfterMs?: number;
  /** The embedded store's document cache (bytes); 0 keeps every document at rest, so a test can count what is read. */
  cacheBytes?: number;
}

export async function startHarness(kind: StoreKind, options: HarnessOptions = {}): Promise<Harness> {
  // The embedded store in a directory of our own, so that tests can read its datafiles.
  const dataDir = kind === "embedded" ? mkdtempSync(join(tmpdir(), "subscribers-test-")) : undefined;
  const { store, cleanup } = dataDir
    ? {
        store: await openEmbeddedStore({ dataDir, ...(options.cacheBytes !== undefined ? { cacheBytes: options.cacheBytes } : {}) }),
        cleanup: () => rmSync(dataDir, { recursive: true, force: true }),
      }
    : await openTestStore(kind, "subscribers");
  const bus = new InProcessEventBus();
  const received: ReceivedEvent[] = [];
  await bus.ensureTopics(topicsOf("subscribers"));
  const subscription = await bus.subscribe({
    group: "test-observer",
    topics: topicsOf("subscribers"),
    handler: async (event) => {
      received.push(event);
    },
  });
  const service = await startSubscribersService({
    store,
    bus,
    logger: createLogger("subscribers", "silent"),
    port: 0,
    sweepIntervalMs: 50,
    sweepGraceMs: 100,
    suppressionKeys: SUPPRESSION_KEYS,
    ...(options.softBounces ? { softBounces: options.softBounces } : {}),
    ...(options.expirySweepIntervalMs !== undefined ? { expirySweepIntervalMs: options.expirySweepIntervalMs } : {}),
    ...(options.minConfirmationExpirySeconds !== undefined ? { minConfirmationExpirySeconds: options.minConfirmationExpirySeconds } : {}),
    ...(options.confirmationResendAfterMs !== undefined ? { confirmationResendAfterMs: options.confirmationResendAfterMs } : {}),
  });
  const transport = createServiceTransport(service.url);
  return {
    service,
    store,
    dataDir,
    bus,
    received,
    subscribers: createClient(SubscriberService, transport),
    tags: createClient(TagService, transport),
    audience: createClient(AudienceService, transport),
    suppressions: createClient(SuppressionService, transport),
    async close() {
      await service.close();
      await subscription.stop();
      await bus.close();
      await store.close();
      cleanup();
    },
  };
}

