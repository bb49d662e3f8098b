// The behaviour every EventBus adapter must show (see src/types.ts). Each
// adapter's test file runs it: in-process.test.ts, kafka.test.ts.
//
// Every test uses its own topics and groups (random suffix), so runs never see
// each other's events, even against a long-lived Kafka. Waits poll until a
// deadline; nothing asserts on timing.

import { randomBytes } from "node:crypto";
import type { EventBus, OutgoingEvent, ReceivedEvent, Subscription } from "../src/index.js";

/** How long a test waits for events before it fails. */
const DEADLINE_MS = 30_000;

export function describeEventBusContract(name: string, open: () => Promise<EventBus>): void {
  describe(`EventBus contract: ${name}`, () => {
    let bus: EventBus;
    /** Subscriptions of the running test, stopped after it. */
    let subscriptions: Subscription[] = [];

    beforeAll(async () => {
      bus = await open();
    });

    afterEach(async () => {
      await Promise.all(subscriptions.map((s) => s.stop()));
      subscriptions = [];
    });

    afterAll(async () => {
      await bus?.close();
    });

    /** Ensures fresh topics for one test. */
    async function freshTopics(...names: string[]): Promise<string[]> {
      const topics = names.map((n) => unique(n));
      await bus.ensureTopics(topics);
      return topics;
    }

    /** Subscribes a recorder: every delivered event lands in the returned array. */
    async function record(
      group: string,
      topics: string[],
      options: { fromBeginning?: boolean } = {},
    ): Promise<ReceivedEvent[]> {
      const received: ReceivedEvent[] = [];
      subscriptions.push(
        await bus.subscribe({
          group,
          topics,
          ...options,
          handler: async (event) => {
            received.push(event);
          },
        }),
      );
      return received;
    }

    it("delivers each event with its key, value bytes and headers intact", async () => {
      const [topic] = await freshTopics("intact");
      const received = await record(unique("group"), [topic!]);
      const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);
      const events: OutgoingEvent[] = [
        { key: "sub_1", value: allBytes, headers: { "content-type": "application/x-protobuf", trace: "t-1" } },
        { key: "sub_2", value: new Uint8Array(0) },
        { key: "cmp_ü/1", value: text("hello"), headers: { note: "grüezi ✓" } },
      ];
      await bus.publish(topic!, events);

      await until(() => received.length >= events.length, "all events delivered");
      expect(received).toHaveLength(events.length);
      for (const sent of events) {
        const got = received.find((event) => event.key === sent.key);
        expect(got).toBeDefined();
        expect(got!.topic).toBe(topic);
        expect(got!.value).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(got!.value).equals(Buffer.from(sent.value))).toBe(true);
        expect(got!.headers).toEqual(sent.headers ?? {});
      }
    });

    it("gives every event to each group", async () => {
      const [topic] = await freshTopics("groups");
      const a = await record(unique("group-a"), [topic!]);
      const b = await record(unique("group-b"), [topic!]);
      const events = range(10).map((i) => ({ key: `k${i % 3}`, value: text(`e${i}`) }));
      await bus.publish(topic!, events);

      await until(() => a.length >= 10 && b.length >= 10, "both groups got all events");
      for (const received of [a, b]) {
        expect(received.map(valueText).sort()).toEqual(events.map((e) => valueText(e)).sort());
      }
    });

    it("keeps order per key across 100 events with mixed keys", async () => {
      const [topic] = await freshTopics("order");
      const received = await record(unique("group"), [topic!]);
      const keys = ["sub_a", "sub_b", "sub_c", "sub_d", "sub_e"];
      const events = range(100).map((i) => ({
        key: keys[(i * 7 + (i >> 2)) % keys.length]!,
        value: text(String(i)),
      }));
      // Several publishes: order must hold across batches too.
      for (let i = 0; i < events.length; i += 25) {
        await bus.publish(topic!, events.slice(i, i + 25));
      }

      await until(() => received.length >= events.length, "100 events delivered");
      expect(received).toHaveLength(events.length);
      for (const key of keys) {
        const sent = events.filter((e) => e.key === key).map((e) => valueText(e));
        const got = received.filter((e) => e.key === key).map(valueText);
        expect(got).toEqual(sent);
      }
    });

    it("redelivers an event whose handler threw, before any later event of its key", async () => {
      const [topic] = await freshTopics("retry");
      const attempts: { key: string; value: string; ok: boolean }[] = [];
      let failed = false;
      subscriptions.push(
        await bus.subscribe({
          group: unique("group"),
          topics: [topic!],
          handler: async (event) => {
            const value = valueText(event);
            if (value === "a1" && !failed) {
              failed = true;
              attempts.push({ key: event.key, value, ok: false });
              // A TypeError on purpose: kafkajs treats that type as unrecoverable
              // unless the adapter says otherwise.
              throw new TypeError("simulated handler failure");
            }
            attempts.push({ key: event.key, value, ok: true });
          },
        }),
      );
      await bus.publish(topic!, [
        { key: "sub_a", value: text("a1"), headers: { attempt: "same" } },
        { key: "sub_a", value: text("a2") },
        { key: "sub_a", value: text("a3") },
        { key: "sub_b", value: text("b1") },
      ]);

      const done = (value: string) => attempts.some((a) => a.value === value && a.ok);
      await until(() => ["a1", "a2", "a3", "b1"].every(done), "every event handled");
      expect(attempts.filter((a) => a.key === "sub_a")).toEqual([
        { key: "sub_a", value: "a1", ok: false },
        { key: "sub_a", value: "a1", ok: true },
        { key: "sub_a", value: "a2", ok: true },
        { key: "sub_a", value: "a3", ok: true },
      ]);
    });

    describe("batches", () => {
      it("hands consecutive events of a partition in batches of at most maxBatch, in order per key", async () => {
        const [topic] = await freshTopics("batches");
        const keys = ["sub_a", "sub_b", "sub_c"];
        const events = range(300).map((i) => ({ key: keys[i % keys.length]!, value: text(String(i)) }));
        // Published before the subscription: the first reads find many waiting.
        await bus.publish(topic!, events);
        const batches: ReceivedEvent[][] = [];
        subscriptions.push(
          await bus.subscribe({
            group: unique("group"),
            topics: [topic!],
            maxBatch: 40,
            batchHandler: async (batch) => {
              batches.push(batch);
            },
          }),
        );
        await until(() => batches.flat().length >= events.length, "300 events delivered");
        const received = batches.flat();
        expect(received).toHaveLength(events.length);
        expect(batches.every((batch) => batch.length >= 1 && batch.length <= 40)).toBe(true);
        // Waiting events were not handed over one at a time.
        expect(batches.some((batch) => batch.length > 1)).toBe(true);
        for (const key of keys) {
          expect(received.filter((e) => e.key === key).map(valueText)).toEqual(events.filter((e) => e.key === key).map(valueText));
        }
      });

      it("redelivers the events of a batch whose handler threw, before anything after them", async () => {
        const [topic] = await freshTopics("batch-retry");
        const calls: { values: string[]; ok: boolean }[] = [];
        let failed = false;
        // One key: one partition, so the order of every call is defined.
        await bus.publish(topic!, range(10).map((i) => ({ key: "sub_one", value: text(`v${i}`) })));
        subscriptions.push(
          await bus.subscribe({
            group: unique("group"),
            topics: [topic!],
            maxBatch: 4,
            batchHandler: async (batch) => {
              const values = batch.map(valueText);
              if (values.includes("v5") && !failed) {
                failed = true;
                calls.push({ values, ok: false });
                throw new TypeError("simulated batch failure");
              }
              calls.push({ values, ok: true });
            },
          }),
        );
        await until(() => calls.some((c) => c.ok && c.values.includes("v9")), "every event handled");
        const failedCall = calls.find((c) => !c.ok)!;
        const after = calls.slice(calls.indexOf(failedCall) + 1);
        // The next call starts with the first event of the failed batch again.
        expect(after[0]!.values[0]).toBe(failedCall.values[0]);
        // Every event was handled once successfully, in order.
        expect(calls.filter((c) => c.ok).flatMap((c) => c.values)).toEqual(range(10).map((i) => `v${i}`));
      });

      it("refuses a subscription with both handlers, neither, or a maxBatch out of range", async () => {
        const [topic] = await freshTopics("batch-options");
        const handler = async () => undefined;
        const base = { group: unique("group"), topics: [topic!] };
        await expect(bus.subscribe({ ...base, maxBatch: 0, batchHandler: handler })).rejects.toThrow(/maxBatch must be an integer from 1 to 10000/);
        await expect(bus.subscribe({ ...base, maxBatch: 10_001, batchHandler: handler })).rejects.toThrow(/maxBatch/);
        await expect(bus.subscribe({ ...base } as unknown as Parameters<EventBus["subscribe"]>[0])).rejects.toThrow(/either handler or batchHandler/);
        await expect(
          bus.subscribe({ ...base, handler, batchHandler: handler, maxBatch: 2 } as unknown as Parameters<EventBus["subscribe"]>[0]),
        ).rejects.toThrow(/either handler or batchHandler/);
      });
    });

    it("keeps an event whose handler never succeeded for the group's next subscription", async () => {
      const [topic] = await freshTopics("unhandled");
      const group = unique("group");
      let attempts = 0;
      const failing = await bus.subscribe({
        group,
        topics: [topic!],
        handler: async () => {
          attempts++;
          throw new Error("always fails");
        },
      });
      await bus.publish(topic!, [{ key: "k", value: text("keep me") }]);
      await until(() => attempts >= 2, "the event was redelivered at least once");
      await failing.stop(); // during a redelivery backoff, most likely

      const next = await record(group, [topic!]);
      await until(() => next.length >= 1, "the next subscription got the event");
      expect(next.map(valueText)).toEqual(["keep me"]);
    });

    it("gives a new group with fromBeginning the events published before it subscribed", async () => {
      const [topic] = await freshTopics("replay");
      const before = range(5).map((i) => ({ key: `k${i}`, value: text(`before-${i}`) }));
      await bus.publish(topic!, before);

      const replaying = await record(unique("group-early"), [topic!], { fromBeginning: true });
      const latest = await record(unique("group-late"), [topic!], { fromBeginning: false });
      await bus.publish(topic!, [{ key: "k0", value: text("after") }]);

      await until(() => replaying.length >= 6 && latest.length >= 1, "both groups got their events");
      expect(replaying.map(valueText).sort()).toEqual([...before.map((e) => valueText(e)), "after"].sort());
      // fromBeginning false: only what was published after subscribe resolved.
      expect(latest.map(valueText)).toEqual(["after"]);
    });

    it("resumes a group after its last handled event when it subscribes again", async () => {
      const [topic] = await freshTopics("resume");
      const group = unique("group");
      const first = await record(group, [topic!]);
      await bus.publish(topic!, [
        { key: "k", value: text("1") },
        { key: "k", value: text("2") },
      ]);
      await until(() => first.length >= 2, "first subscription got its events");
      await Promise.all(subscriptions.map((s) => s.stop()));
      subscriptions = [];

      await bus.publish(topic!, [{ key: "k", value: text("3") }]);
      const second = await record(group, [topic!]);
      await until(() => second.length >= 1, "second subscription got the new event");
      expect(first.map(valueText)).toEqual(["1", "2"]);
      expect(second.map(valueText)).toEqual(["3"]);
    });

    it("waits in stop() for the handler in flight", async () => {
      const [topic] = await freshTopics("stop");
      const release = deferred();
      let started = false;
      let finished = false;
      const subscription = await bus.subscribe({
        group: unique("group"),
        topics: [topic!],
        handler: async () => {
          started = true;
          await release.promise;
          finished = true;
        },
      });
      await bus.publish(topic!, [{ key: "k", value: text("slow") }]);
      await until(() => started, "handler started");

      let stopped = false;
      const stopping = subscription.stop().then(() => {
        stopped = true;
      });
      // The handler cannot finish before we release it, so stop cannot have resolved.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(stopped).toBe(false);

      release.resolve();
      await stopping;
      expect(finished).toBe(true);
      await subscription.stop(); // idempotent
    });

    it("refuses topics that were never ensured", async () => {
      const topic = unique("never-created");
      await expect(bus.publish(topic, [{ key: "k", value: text("x") }])).rejects.toThrow(/no such topic/);
      await expect(
        bus.subscribe({ group: unique("group"), topics: [topic], handler: async () => {} }),
      ).rejects.toThrow(/no such topic/);
    });

    it("closes twice harmlessly and refuses work once closed", async () => {
      const own = await open();
      const [topic] = [unique("close")];
      await own.ensureTopics([topic!]);
      const received: ReceivedEvent[] = [];
      await own.subscribe({
        group: unique("group"),
        topics: [topic!],
        handler: async (event) => {
          received.push(event);
        },
      });
      await own.publish(topic!, [{ key: "k", value: text("x") }]);
      await until(() => received.length >= 1, "event delivered");

      await own.close();
      await own.close();
      await expect(own.publish(topic!, [{ key: "k", value: text("y") }])).rejects.toThrow(/closed/);
    });
  });
}

/** Polls `condition` until it holds; fails with `what` after the deadline. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function unique(name: string): string {
  return `test.events.${name}.${randomBytes(5).toString("hex")}`;
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

function text(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

function valueText(event: { value: Uint8Array }): string {
  return new TextDecoder().decode(event.value);
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
