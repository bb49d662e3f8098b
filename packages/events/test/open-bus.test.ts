import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { InProcessEventBus, KafkaEventBus, openBus } from "../src/index.js";

describe("openBus", () => {
  it("opens the memory-only in-process bus when neither brokers nor a dataDir are given", async () => {
    for (const brokers of [undefined, "", " , "]) {
      const bus = await openBus({ brokers, clientId: "test", logger: () => {} });
      expect(bus).toBeInstanceOf(InProcessEventBus);
      await bus.close();
    }
  });

  it("opens the durable in-process bus in <dataDir>/bus/<clientId>, locked while open", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "open-bus-"));
    try {
      const bus = await openBus({ clientId: "embedded", dataDir, logger: () => {} });
      expect(bus).toBeInstanceOf(InProcessEventBus);
      const dir = path.join(dataDir, "bus", "embedded");
      expect((await stat(path.join(dir, "topics"))).isDirectory()).toBe(true);
      await expect(readFile(path.join(dir, ".lock"), "utf8").then((text) => JSON.parse(text))).resolves.toMatchObject({ pid: process.pid });
      await expect(openBus({ clientId: "embedded", dataDir, logger: () => {} })).rejects.toThrow(/already open in this process/);
      await bus.close();
      await expect(stat(path.join(dir, ".lock"))).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("refuses a clientId that is no plain folder name", async () => {
    await expect(openBus({ clientId: "../elsewhere", dataDir: tmpdir(), logger: () => {} })).rejects.toThrow(/names the bus folder/);
  });

  it("opens the Kafka bus for a comma-separated broker list, connecting lazily", async () => {
    const bus = await openBus({ brokers: "127.0.0.1:1, 127.0.0.1:2", clientId: "test", dataDir: "/nonexistent", logger: () => {} });
    expect(bus).toBeInstanceOf(KafkaEventBus);
    await bus.close(); // never connected: nothing to wait for
  });
});
