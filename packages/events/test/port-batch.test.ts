import { packEvents, unpackEvents, type PortEvent } from "../src/port-batch.js";
import { partitionOf } from "../src/log/partition.js";

// The packed form events take across the MessagePort between a worker's
// PortEventBus and the main thread's bus (port-batch.ts).
describe("packEvents / unpackEvents", () => {
  it("carries keys, headers and values exactly, each value a view of the one buffer", () => {
    const events: PortEvent[] = [
      { key: "sub_01", value: new Uint8Array([1, 2, 3]), headers: { "event-id": "evt_1", "event-type": "email.status" } },
      { key: "ключ-🙂", value: new Uint8Array(0), headers: { "ümlaut": "välue 🙂", empty: "" } },
      { key: "", value: Uint8Array.from({ length: 70_000 }, (_, i) => i % 251) },
      // A view into a larger buffer: only its own bytes travel.
      { key: "k", value: new Uint8Array(new Uint8Array([9, 8, 7, 6, 5]).buffer, 1, 3), headers: {} },
      // A lone surrogate becomes U+FFFD, as the log's own UTF-8 encoding makes it.
      { key: "a\ud800b", value: new Uint8Array([0]), headers: { h: "\udc00" } },
    ];
    const data = packEvents(events)!;
    const back = unpackEvents(data, "t");
    expect(back.map((e) => ({ topic: e.topic, key: e.key, value: [...e.value], headers: e.headers }))).toEqual([
      { topic: "t", key: "sub_01", value: [1, 2, 3], headers: { "event-id": "evt_1", "event-type": "email.status" } },
      { topic: "t", key: "ключ-🙂", value: [], headers: { "ümlaut": "välue 🙂", empty: "" } },
      { topic: "t", key: "", value: [...events[2]!.value], headers: {} },
      { topic: "t", key: "k", value: [8, 7, 6], headers: {} },
      { topic: "t", key: "a\ufffdb", value: [0], headers: { h: "\ufffd" } },
    ]);
    for (const event of back) expect(event.value.buffer).toBe(data);
    expect(unpackEvents(packEvents([])!, "t")).toEqual([]);
  });

  it("refuses what is not an event, so that the bus rejects it with its own error", () => {
    expect(packEvents([{ key: 1 as unknown as string, value: new Uint8Array(1) }])).toBeUndefined();
    expect(packEvents([{ key: "k", value: [1, 2] as unknown as Uint8Array }])).toBeUndefined();
    expect(packEvents([{ key: "k", value: new Uint8Array(1), headers: { h: 3 as unknown as string } }])).toBeUndefined();
    expect(packEvents([{ key: "k", value: new Uint8Array(1), headers: { ["n".repeat(0x10000)]: "v" } }])).toBeUndefined();
  });
});

describe("partitionOf", () => {
  // FNV-1a over the key's UTF-8 bytes, as every durable log on disk was partitioned: the ASCII path must agree.
  const reference = (key: string, partitions: number) => {
    let hash = 0x811c9dc5;
    for (const byte of Buffer.from(key, "utf8")) {
      hash ^= byte;
      hash = Math.imul(hash, 0x01000193);
    }
    return (hash >>> 0) % partitions;
  };

  it("is FNV-1a of the UTF-8 bytes, for ASCII and other keys", () => {
    const keys = ["", "sub_01HZY3", "eml_0000000000000000000000000", "ключ", "a\u007fb", "é", "🙂", "x\ud800"];
    for (let i = 0; i < 200; i++) keys.push(`key-${i}-${"z".repeat(i % 7)}`);
    for (const key of keys) for (const partitions of [1, 3, 7]) expect(partitionOf(key, partitions)).toBe(reference(key, partitions));
    // Fixed values: a log written before keeps its keys in their partitions.
    const fixed = ["sub_1", "eml_2", "ключ", "sub_01HZY3"];
    expect(fixed.map((key) => partitionOf(key, 3))).toEqual([2, 0, 2, 0]);
    expect(fixed.map((key) => partitionOf(key, 7))).toEqual([0, 5, 4, 4]);
  });
});
