import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { InProcessEventBus } from "../src/index.js";
import { describeEventBusContract } from "./contract.js";

describeEventBusContract("in-process, memory only", async () => new InProcessEventBus({ logger: () => {} }));

// The same contract on the durable bus, each bus in a directory of its own.
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});
describeEventBusContract("in-process, durable", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "bus-contract-"));
  dirs.push(dir);
  return InProcessEventBus.open({ dir, logger: () => {} });
});

// What only the memory-only in-process bus promises beyond the contract.
describe("InProcessEventBus, memory only", () => {
  const text = (s: string) => new TextEncoder().encode(s);
  const decode = (v: Uint8Array) => new TextDecoder().decode(v);

  it("never runs a handler inside publish", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(["t"]);
    let calls = 0;
    await bus.subscribe({ group: "g", topics: ["t"], handler: async () => void calls++ });
    const publishing = bus.publish("t", [{ key: "k", value: text("x") }]);
    expect(calls).toBe(0);
    await publishing;
    await bus.close();
  });

  it("keeps only the retained tail of a topic for a group that subscribes late", async () => {
    const bus = new InProcessEventBus({ partitions: 1, retention: 3, logger: () => {} });
    await bus.ensureTopics(["t"]);
    await bus.publish("t", ["1", "2", "3", "4", "5"].map((v) => ({ key: "k", value: text(v) })));
    const got: string[] = [];
    await bus.subscribe({ group: "late", topics: ["t"], handler: async (e) => void got.push(decode(e.value)) });
    const deadline = Date.now() + 5000;
    while (got.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual(["3", "4", "5"]);
    await bus.close();
  });

  it("copies values, so a publisher reusing its buffer cannot change the log", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(["t"]);
    const buffer = text("original");
    await bus.publish("t", [{ key: "k", value: buffer }]);
    buffer.fill(0);
    const got: string[] = [];
    await bus.subscribe({ group: "g", topics: ["t"], handler: async (e) => void got.push(decode(e.value)) });
    const deadline = Date.now() + 5000;
    while (got.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual(["original"]);
    await bus.close();
  });

  it("allows one subscription per group and topic at a time", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(["t"]);
    const first = await bus.subscribe({ group: "g", topics: ["t"], handler: async () => {} });
    await expect(bus.subscribe({ group: "g", topics: ["t"], handler: async () => {} })).rejects.toThrow(
      /already consumes/,
    );
    await first.stop();
    const again = await bus.subscribe({ group: "g", topics: ["t"], handler: async () => {} });
    await again.stop();
    await bus.close();
  });

  it("rejects invalid topic names, as Kafka would", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await expect(bus.ensureTopics(["no spaces"])).rejects.toThrow(/invalid topic name/);
    await expect(bus.ensureTopics([".."])).rejects.toThrow(/invalid topic name/);
    await bus.close();
  });
});
