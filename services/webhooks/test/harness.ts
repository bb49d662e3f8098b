import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient, type Client } from "@connectrpc/connect";
import { encodeEvent, InProcessEventBus, publishEvents, type EventBody, type Topic } from "@emailsvc/events";
import { createServiceTransport } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { webhooks } from "@emailsvc/proto";
import type { DocumentStore } from "@emailsvc/storage";
import { createLogger } from "@emailsvc/telemetry";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { openTestStore, type StoreKind } from "@emailsvc/testing";
import { generateKeyText, parseKeyRing } from "@emailsvc/tokens";
import type { Resolver } from "../src/http/post.js";
import { startWebhooksService, type RunningWebhooksService, type WebhooksServiceOptions } from "../src/server.js";

export { asCall as as, testTenant as tenant, waitFor, type StoreKind } from "@emailsvc/testing";

/** A request the receiver got. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * An HTTP receiver standing for an integrator's endpoint: it records every
 * request and answers the statuses queued for its path (then 200).
 */
export class Receiver {
  readonly received: Received[] = [];
  private readonly answers = new Map<string, Array<number | { redirect: string }>>();
  private server!: Server;
  port = 0;

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    receiver.server = createServer((req, res) => receiver.handle(req, res));
    await new Promise<void>((resolve) => receiver.server.listen(0, "127.0.0.1", resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  /** Answers the next requests to `path` with these statuses (or a redirect), in order; 200 after. */
  answer(path: string, ...answers: Array<number | { redirect: string }>): void {
    this.answers.set(path, [...(this.answers.get(path) ?? []), ...answers]);
  }

  /** Answers every request to `path` with `status` from now on. */
  always(path: string, status: number): void {
    this.answers.set(path, new Array<number>(100_000).fill(status));
  }

  to(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      this.received.push({ path, headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString("utf8") });
      const answer = this.answers.get(path)?.shift() ?? 200;
      if (typeof answer === "object") {
        res.writeHead(302, { location: answer.redirect });
        res.end();
      } else {
        res.writeHead(answer, { "content-type": "text/plain" });
        res.end("ok");
      }
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

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
  store: DocumentStore;
  bus: InProcessEventBus;
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

export async function startHarness(kind: StoreKind, options: Partial<WebhooksServiceOptions> = {}): Promise<Harness> {
  const { store, cleanup } = await openTestStore(kind, "webhooks");
  const bus = new InProcessEventBus();
  const receiver = await Receiver.start();
  const lookups: string[] = [];
  const service = await startWebhooksService({
    store,
    bus,
    logger: createLogger("webhooks", "silent"),
    port: 0,
    sealingKeys: parseKeyRing(generateKeyText("test"), "SEALING_KEYS"),
    allowHttp: true,
    allowPrivateRanges: ["127.0.0.0/8"],
    resolver: testResolver(lookups),
    retry: { delaysMs: [200], retryForMs: 60_000 },
    senderIntervalMs: 50,
    ...options,
  });
  return {
    service,
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
