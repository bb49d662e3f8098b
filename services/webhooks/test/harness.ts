import { createClient, type Client } from "@connectrpc/connect";
import { encodeEvent, InProcessEventBus, publishEvents, type EventBody, type EventBus, type Topic } from "@emailsvc/events";
import { createServiceTransport } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { webhooks } from "@emailsvc/proto";
import type { DocumentStore } from "@emailsvc/storage";
import { createLogger } from "@emailsvc/telemetry";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { openTestStore, type StoreKind } from "@emailsvc/testing";
import { generateKeyText, parseKeyRing, type KeyRing } from "@emailsvc/tokens";
import type { Resolver } from "../src/http/post.js";
import { Receiver } from "./receiver.js";
import { startWebhooksService, type RunningWebhooksService, type WebhooksServiceOptions } from "../src/server.js";

export { Receiver, type Received } from "./receiver.js";
export { asCall as as, testTenant as tenant, waitFor, type StoreKind } from "@emailsvc/testing";

/** Names the tests' resolver knows: `receiver.test` is this machine (as DNS pointing at loopback would be). */
export function testResolver(lookups: string[] = []): Resolver {
  const table: Record<string, string> = { "receiver.test": "127.0.0.1", "metadata.test": "169.254.169.254", "private.test": "10.1.2.3" };
  return async (hostname) => {
    lookups.push(hostname);
    const address = table[hostname];
    if (!address) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return [{ address, family: 4 }];
  };
}

export interface Harness {
  service: RunningWebhooksService;
  /** The SEALING_KEYS the service runs with (a second instance on the same store needs them). */
  sealingKeys: KeyRing;
  store: DocumentStore;
  bus: EventBus;
  client: Client<typeof webhooks.WebhookService>;
  receiver: Receiver;
  /** The resolver's lookups, by host name. */
  lookups: string[];
  /** `http://receiver.test:<port><path>`. */
  url(path: string): string;
  /** Publishes an event of `topic` for the tenant; returns its event id. */
  publish<T extends Topic>(topic: T, call: CallContext, body: EventBody<T>, eventId?: string): Promise<string>;
  close(): Promise<void>;
}

/** `options.bus`: another bus than a memory-only one (Kafka); the harness closes it. */
export async function startHarness(kind: StoreKind, options: Partial<WebhooksServiceOptions> = {}): Promise<Harness> {
  const { store, cleanup } = await openTestStore(kind, "webhooks");
  const bus = options.bus ?? new InProcessEventBus();
  const receiver = await Receiver.start();
  const lookups: string[] = [];
  const sealingKeys = parseKeyRing(generateKeyText("test"), "SEALING_KEYS");
  const service = await startWebhooksService({
    store,
    bus,
    logger: createLogger("webhooks", "silent"),
    port: 0,
    sealingKeys,
    allowHttp: true,
    allowPrivateRanges: ["127.0.0.0/8"],
    resolver: testResolver(lookups),
    retry: { delaysMs: [200], retryForMs: 60_000 },
    senderIntervalMs: 50,
    ...options,
  });
  return {
    service,
    sealingKeys,
    store,
    bus,
    client: createClient(webhooks.WebhookService, createServiceTransport(service.url)),
    receiver,
    lookups,
    url: (path) => `http://receiver.test:${receiver.port}${path}`,
    async publish(topic, call, body, eventId = newId("evt")) {
      await publishEvents(bus, [encodeEvent(topic, { eventId, tenant: tenantKey(call.tenant), occurredAt: Date.now() }, body)]);
      return eventId;
    },
    async close() {
      await service.close();
      await bus.close();
      await store.close();
      await receiver.close();
      cleanup();
    },
  };
}
