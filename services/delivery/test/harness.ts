import { createClient, type Client } from "@connectrpc/connect";
import { fromBinary } from "@bufbuild/protobuf";
import { emailOutcomesOf, InProcessEventBus, type EmailOutcome, type EventBus, type ReceivedEvent, type Subscription } from "@emailsvc/events";
import { delivery, events } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { createLogger } from "@emailsvc/telemetry";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEmbeddedStore, type DocumentStore } from "@emailsvc/storage";
import { topicsOf } from "@emailsvc/manifest";
import { startDeliveryService, type DeliveryServiceOptions, type RunningDeliveryService } from "../src/server.js";
import { loadProviders, type ProviderSetup } from "../src/providers/registry.js";
import { FakeSubscribers } from "./support/fake-subscribers.js";
import { FakeTemplates } from "./support/fake-templates.js";
import { compileRenderer } from "@emailsvc/render";
import { openTestStore, type StoreKind } from "@emailsvc/testing";

// The kit's pieces every service's tests share (packages/testing, services.ts).
export { asCall as as, mongoUrl, testTenant as tenant, waitFor, type StoreKind } from "@emailsvc/testing";

/** What a test may set on the service; the rest is the harness' (store, bus, templates, renderer). */
export type ServiceOverrides = Partial<Omit<DeliveryServiceOptions, "store" | "bus" | "logger" | "port" | "templatesUrl" | "templatesTransport">>;

export interface Harness {
  service: RunningDeliveryService;
  store: DocumentStore;
  /** The embedded store's directory (its datafiles); undefined on MongoDB. */
  dataDir: string | undefined;
  bus: EventBus;
  templates: FakeTemplates;
  /** The SubscriberService delivery looks recipients up in (unless a test passes its own). */
  subscribers: FakeSubscribers;
  /** Every event of delivery's topics the bus carried, in arrival order. */
  received: ReceivedEvent[];
  client: Client<typeof delivery.DeliveryService>;
  /** Starts another instance on the same store, bus and templates (the previous one must be closed). */
  restart(overrides?: ServiceOverrides): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions extends ServiceOverrides {
  store?: StoreKind;
  /** A bus to use instead of a fresh in-process one (the harness does not close it). */
  bus?: EventBus;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { store: kind = "embedded", bus: givenBus, ...overrides } = options;
  // The embedded store in a directory of our own, so that tests can read its datafiles.
  const dataDir = kind === "embedded" ? mkdtempSync(join(tmpdir(), "delivery-test-")) : undefined;
  const { store, cleanup } = dataDir
    ? { store: await openEmbeddedStore({ dataDir }), cleanup: () => rmSync(dataDir, { recursive: true, force: true }) }
    : await openTestStore(kind, "delivery");
  const bus = givenBus ?? new InProcessEventBus({ backoff: { initialMs: 50, maxMs: 400 }, logger: () => {} });
  const templates = await new FakeTemplates().start();
  const subscribers = await new FakeSubscribers().start();
  const received: ReceivedEvent[] = [];
  await bus.ensureTopics(topicsOf("delivery"));
  const observer: Subscription = await bus.subscribe({
    group: `test-observer-${newId("grp").slice(4)}`,
    topics: topicsOf("delivery"),
    fromBeginning: false,
    handler: async (event) => {
      received.push(event);
    },
  });
  const start = (o: ServiceOverrides) =>
    startDeliveryService({
      store,
      bus,
      logger: createLogger("delivery", process.env.DELIVERY_TEST_LOG ? "debug" : "silent"),
      port: 0,
      templatesUrl: templates.url,
      subscribersUrl: subscribers.url,
      renderer: compileRenderer,
      sweepIntervalMs: 50,
      sweepGraceMs: 100,
      leaseMs: 5000,
      ...o,
      // Deferred emails come back within tens of milliseconds (the retry sweep runs every 50 ms).
      retry: { backoffMs: 20, maxBackoffMs: 100, windowMs: 60_000, ...o.retry },
    });
  let service = await start(overrides);
  const h: Harness = {
    service,
    store,
    dataDir,
    bus,
    templates,
    subscribers,
    received,
    client: createClient(delivery.DeliveryService, createServiceTransport(service.url)),
    async restart(next = overrides) {
      service = await start(next);
      h.service = service;
      h.client = createClient(delivery.DeliveryService, createServiceTransport(service.url));
    },
    async close() {
      await service.close({ graceMs: 1000 });
      await observer.stop();
      if (!givenBus) await bus.close();
      await templates.close();
      await subscribers.close();
      await store.close();
      cleanup();
    },
  };
  return h;
}


/** Live mail over SMTP to `url` (EMAIL_PROVIDER=smtp, SMTP_URL), as the service reads it from its environment. */
export function smtpProviders(url: string): ProviderSetup {
  return loadProviders({ EMAIL_PROVIDER: "smtp", SMTP_URL: url });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What delivery announced for an email on `email.status` so far, in order:
 * its own events and its items of batches (a campaign's outcomes), each with
 * its event.
 */
export function announcedOutcomes(h: Pick<Harness, "received">, emailId: string): Array<EmailOutcome & { event: ReceivedEvent }> {
  const found: Array<EmailOutcome & { event: ReceivedEvent }> = [];
  for (const event of h.received) {
    if (event.topic !== "email.status") continue;
    for (const outcome of emailOutcomesOf(fromBinary(events.EmailStatusChangedSchema, event.value))) {
      if (outcome.emailId === emailId) found.push({ ...outcome, event });
    }
  }
  return found;
}

/** The statuses delivery announced for an email on `email.status` so far, in order (announcedOutcomes). */
export function announcedStatuses(h: Pick<Harness, "received">, emailId: string): string[] {
  return announcedOutcomes(h, emailId).map((outcome) => outcome.status);
}
