import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@connectrpc/connect";
import { InProcessEventBus, type EventBus, type ReceivedEvent } from "@emailsvc/events";
import { SubscriberService, TagService } from "@emailsvc/proto";
import { callHeaders, createLogger, createServiceTransport, newId, type CallContext } from "@emailsvc/runtime";
import { openEmbeddedStore, openMongoStore, type DocumentStore } from "@emailsvc/storage";
import { SUBSCRIBER_TOPICS } from "../src/messaging/outbox.js";
import { startSubscribersService, type RunningSubscribersService } from "../src/server.js";

export type StoreKind = "embedded" | "mongodb";

export function mongoUrl(): string {
  const url = process.env.MONGO_URL;
  if (!url) throw new Error("MONGO_URL is not set: run the tests through `npm test`, whose setup starts FerretDB");
  return url;
}

export interface Harness {
  service: RunningSubscribersService;
  store: DocumentStore;
  bus: EventBus;
  /** Every event the bus carried, in arrival order. */
  received: ReceivedEvent[];
  subscribers: Client<typeof SubscriberService>;
  tags: Client<typeof TagService>;
  close(): Promise<void>;
}

export async function openStoreOf(kind: StoreKind): Promise<{ store: DocumentStore; cleanup: () => void }> {
  if (kind === "mongodb") {
    return { store: await openMongoStore({ url: mongoUrl(), dbName: `subscribers_test_${newId("db").slice(3, 20)}` }), cleanup: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), "subscribers-test-"));
  return { store: await openEmbeddedStore({ dataDir: dir }), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function startHarness(kind: StoreKind): Promise<Harness> {
  const { store, cleanup } = await openStoreOf(kind);
  const bus = new InProcessEventBus();
  const received: ReceivedEvent[] = [];
  await bus.ensureTopics([...SUBSCRIBER_TOPICS]);
  const subscription = await bus.subscribe({
    group: "test-observer",
    topics: [...SUBSCRIBER_TOPICS],
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
  });
  const transport = createServiceTransport(service.url);
  return {
    service,
    store,
    bus,
    received,
    subscribers: createClient(SubscriberService, transport),
    tags: createClient(TagService, transport),
    async close() {
      await service.close();
      await subscription.stop();
      await bus.close();
      await store.close();
      cleanup();
    },
  };
}

export function tenant(mode: "live" | "test" = "test", accountId = newId("acc")): CallContext {
  return { tenant: { accountId, mode }, actor: "api_key:key_test", requestId: "req_test" };
}

export function as(call: CallContext) {
  return { headers: callHeaders(call) };
}

export async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 10000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
