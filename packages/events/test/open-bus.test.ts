import { InProcessEventBus, KafkaEventBus, openBus } from "../src/index.js";

describe("openBus", () => {
  it("opens the in-process bus when no brokers are given", async () => {
    for (const brokers of [undefined, "", " , "]) {
      const bus = openBus({ brokers, clientId: "test", logger: () => {} });
      expect(bus).toBeInstanceOf(InProcessEventBus);
      await bus.close();
    }
  });

  it("opens the Kafka bus for a comma-separated broker list, connecting lazily", async () => {
    const bus = openBus({ brokers: "127.0.0.1:1, 127.0.0.1:2", clientId: "test", logger: () => {} });
    expect(bus).toBeInstanceOf(KafkaEventBus);
    await bus.close(); // never connected: nothing to wait for
  });
});
