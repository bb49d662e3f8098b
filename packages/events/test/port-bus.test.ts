import { MessageChannel, Worker } from "node:worker_threads";
import { exposeBus, InProcessEventBus, PortEventBus } from "../src/index.js";
import { describeEventBusContract } from "./contract.js";

// The bus a service in a worker thread of `npm start` uses: every call crosses
// a MessagePort to the in-process bus of the main thread. It must keep the
// whole contract (ordering, redelivery after a handler error, batches, groups).
const channels: MessageChannel[] = [];
afterAll(() => {
  for (const channel of channels) {
    channel.port1.close();
    channel.port2.close();
  }
});

describeEventBusContract("in-process, through a MessagePort", async () => {
  const owner = new InProcessEventBus({ logger: () => {} });
  const channel = new MessageChannel();
  channels.push(channel);
  exposeBus(owner, channel.port1);
  return new PortEventBus(channel.port2);
});

describe("PortEventBus across a real worker thread", () => {
  it("carries events both ways and answers a worker's handler error with a redelivery", async () => {
    const owner = new InProcessEventBus({ logger: () => {}, backoff: { initialMs: 10, maxMs: 20 } });
    await owner.ensureTopics(["to-worker", "from-worker"]);
    const channel = new MessageChannel();
    const served = exposeBus(owner, channel.port1);
    const echoed: string[] = [];
    await owner.subscribe({ group: "main", topics: ["from-worker"], handler: async (e) => void echoed.push(new TextDecoder().decode(e.value)) });
    // The worker's handler fails the first delivery of each event, then echoes it back.
    const worker = new Worker(
      `
      const { workerData } = require("node:worker_threads");
      const { PortEventBus } = require(${JSON.stringify(require.resolve("../dist/index.js"))});
      const bus = new PortEventBus(workerData.port);
      const seen = new Set();
      bus.subscribe({ group: "worker", topics: ["to-worker"], handler: async (e) => {
        const text = new TextDecoder().decode(e.value);
        if (!seen.has(text)) { seen.add(text); throw new Error("first delivery fails"); }
        await bus.publish("from-worker", [{ key: e.key, value: new TextEncoder().encode(text + "!") }]);
      } });
      `,
      { eval: true, workerData: { port: channel.port2 }, transferList: [channel.port2] },
    );
    try {
      await owner.publish("to-worker", ["a", "b", "c"].map((s) => ({ key: "k", value: new TextEncoder().encode(s) })));
      const deadline = Date.now() + 20_000;
      while (echoed.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(echoed).toEqual(["a!", "b!", "c!"]);
    } finally {
      await served.stop();
      await worker.terminate();
      await owner.close();
    }
  });
});
