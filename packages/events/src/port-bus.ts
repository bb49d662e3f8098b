// One event bus shared across threads. `npm start` runs every service in one
// process on the in-process bus, whose log and consumer groups live in the
// memory of one thread. A service moved to a worker thread (to use the
// machine's second core) reaches that bus through a MessagePort:
// `exposeBus` serves it on the owning thread, `PortEventBus` is the port's
// EventBus on the worker. Delivery semantics are the bus' own: a worker's
// handler runs for every delivery and its answer (or its error, which makes
// the bus deliver again after its backoff) travels back before the bus moves on.
//
// Events cross the port packed, a batch in one transferred buffer
// (port-batch.ts), both ways: a worker's publish, and a delivery to it. The
// main thread, which serves the bus to every worker and runs the log, then
// neither serializes nor rebuilds an object per event, and hands a delivery
// the log's own views of the events (packing copies them) instead of a copy
// per group.
import type { MessagePort } from "node:worker_threads";
import { packEvents, unpackEvents } from "./port-batch.js";
import { batchDelivery, SHARED_VIEWS } from "./shared.js";
import type { EventBus, ReceivedEvent, SubscribeOptions, Subscription, TopicLag, OutgoingEvent } from "./types.js";

/** A call from the worker's side. */
type Call =
  | { op: "publish"; topic: string; events: OutgoingEvent[] }
  /** A publish whose events are packed (port-batch.ts); `publish` carries a batch packing refused, for the bus to reject. */
  | { op: "publishPacked"; topic: string; data: ArrayBuffer }
  | { op: "ensureTopics"; topics: string[] }
  | { op: "lag"; group: string; topics: string[] }
  | { op: "subscribe"; sub: number; group: string; topics: string[]; fromBeginning?: boolean; maxBatch: number }
  | { op: "unsubscribe"; sub: number }
  | { op: "close" };

/** Messages on the port, both ways: calls and their answers, deliveries and theirs. */
type Message =
  | { kind: "call"; id: number; call: Call }
  | { kind: "answer"; id: number; error?: string; value?: unknown }
  | { kind: "deliver"; id: number; sub: number; topic: string; data: ArrayBuffer };

/** Answers of one side's outstanding requests, by id. */
class Pending {
  private next = 1;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();

  open(): { id: number; answered: Promise<unknown> } {
    const id = this.next++;
    const answered = new Promise<unknown>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    return { id, answered };
  }

  settle(message: Extract<Message, { kind: "answer" }>): void {
    const waiter = this.waiting.get(message.id);
    if (!waiter) return;
    this.waiting.delete(message.id);
    if (message.error !== undefined) waiter.reject(new Error(message.error));
    else waiter.resolve(message.value);
  }

  /** The port is gone: nothing outstanding will be answered. */
  failAll(reason: string): void {
    for (const waiter of this.waiting.values()) waiter.reject(new Error(reason));
    this.waiting.clear();
  }
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Serves `bus` to the thread at the other end of `port`. The bus stays this
 * thread's (closing the port stops only the worker's subscriptions). Resolves
 * the returned `stop` once those subscriptions have drained.
 */
export function exposeBus(bus: EventBus, port: MessagePort): { stop(): Promise<void> } {
  const subscriptions = new Map<number, Subscription>();
  const deliveries = new Pending();
  const answer = (id: number, work: Promise<unknown>) =>
    work.then(
      (value) => port.postMessage({ kind: "answer", id, value } satisfies Message),
      (err: unknown) => port.postMessage({ kind: "answer", id, error: errorText(err) } satisfies Message),
    );
  const stopAll = async () => {
    const open = [...subscriptions.values()];
    subscriptions.clear();
    await Promise.all(open.map((s) => s.stop()));
  };

  const handle = async (call: Call): Promise<unknown> => {
    switch (call.op) {
      case "publish":
        return bus.publish(call.topic, call.events);
      case "publishPacked":
        return bus.publish(call.topic, unpackEvents(call.data, call.topic));
      case "ensureTopics":
        return bus.ensureTopics(call.topics);
      case "lag":
        return bus.lag(call.group, call.topics) as Promise<TopicLag[]>;
      case "subscribe": {
        const deliver = async (events: ReceivedEvent[]) => {
          const { id, answered } = deliveries.open();
          // Packed at once, before any await: the events may be the log's own views (SHARED_VIEWS).
          const data = packEvents(events)!;
          port.postMessage({ kind: "deliver", id, sub: call.sub, topic: events[0]!.topic, data } satisfies Message, [data]);
          await answered;
        };
        // A per-event handler on the worker is a batch handler of one here: the same deliveries, in the same order.
        const options: SubscribeOptions & { [SHARED_VIEWS]?: boolean } = { group: call.group, topics: call.topics, batchHandler: deliver, maxBatch: call.maxBatch };
        options[SHARED_VIEWS] = true;
        if (call.fromBeginning !== undefined) options.fromBeginning = call.fromBeginning;
        subscriptions.set(call.sub, await bus.subscribe(options));
        return undefined;
      }
      case "unsubscribe": {
        const subscription = subscriptions.get(call.sub);
        subscriptions.delete(call.sub);
        return subscription?.stop();
      }
      case "close":
        return stopAll();
    }
  };

  port.on("message", (message: Message) => {
    if (message.kind === "call") void answer(message.id, handle(message.call));
    else if (message.kind === "answer") deliveries.settle(message);
  });
  port.on("close", () => deliveries.failAll("the worker's bus port closed"));
  return {
    stop: async () => {
      // Deliveries waiting for a worker that is gone are failed, so the bus keeps them for the next consumer.
      deliveries.failAll("the worker's bus port closed");
      await stopAll();
    },
  };
}

/** The EventBus of a worker thread: every call goes to the bus `exposeBus` serves at the port's other end. */
export class PortEventBus implements EventBus {
  private readonly calls = new Pending();
  private readonly handlers = new Map<number, (events: ReceivedEvent[]) => Promise<void>>();
  private nextSub = 1;
  private closed = false;

  constructor(private readonly port: MessagePort) {
    port.on("message", (message: Message) => {
      if (message.kind === "answer") this.calls.settle(message);
      else if (message.kind === "deliver") void this.deliver(message);
    });
    port.on("close", () => this.calls.failAll("the bus port closed"));
  }

  private async deliver(message: Extract<Message, { kind: "deliver" }>): Promise<void> {
    const handler = this.handlers.get(message.sub);
    try {
      if (!handler) throw new Error("no such subscription in this worker");
      await handler(unpackEvents(message.data, message.topic));
      this.port.postMessage({ kind: "answer", id: message.id } satisfies Message);
    } catch (err) {
      this.port.postMessage({ kind: "answer", id: message.id, error: errorText(err) } satisfies Message);
    }
  }

  private async call(call: Call, transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (this.closed) throw new Error("event bus is closed");
    const { id, answered } = this.calls.open();
    this.port.postMessage({ kind: "call", id, call } satisfies Message, transfer);
    return answered;
  }

  async publish(topic: string, events: OutgoingEvent[]): Promise<void> {
    if (events.length === 0) return;
    const data = packEvents(events);
    if (data === undefined) await this.call({ op: "publish", topic, events });
    else await this.call({ op: "publishPacked", topic, data }, [data]);
  }

  async ensureTopics(topics: string[]): Promise<void> {
    await this.call({ op: "ensureTopics", topics });
  }

  async lag(group: string, topics: string[]): Promise<TopicLag[]> {
    return (await this.call({ op: "lag", group, topics })) as TopicLag[];
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    const { deliver, max } = batchDelivery(options);
    const sub = this.nextSub++;
    this.handlers.set(sub, deliver);
    try {
      await this.call({
        op: "subscribe",
        sub,
        group: options.group,
        topics: options.topics,
        ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
        maxBatch: max,
      });
    } catch (err) {
      this.handlers.delete(sub);
      throw err;
    }
    let stopping: Promise<void> | undefined;
    return {
      stop: () =>
        (stopping ??= this.call({ op: "unsubscribe", sub }).then(
          () => void this.handlers.delete(sub),
          () => void this.handlers.delete(sub),
        )),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.call({ op: "close" }).catch(() => undefined);
    this.closed = true;
    this.handlers.clear();
  }
}
