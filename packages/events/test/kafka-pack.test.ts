// The Kafka adapter's packs (src/kafka-pack.ts): consecutive events of one
// partition written as one record and read back as they were published.

import { PACK_HEADER, packEvents, unpackEvents, type PackableEvent, type PackedRecord } from "../src/kafka-pack.js";

const bytes = (text: string) => new Uint8Array(Buffer.from(text));

/** The events a list of records stands for, unpacked, in order. */
function readBack(records: PackedRecord[]): Array<{ key: string; value: string; headers: Record<string, string> }> {
  return records.flatMap((record) => {
    const events = record.packed ? unpackEvents(record.value)! : [{ ...record.event, headers: record.event.headers ?? {} }];
    return events.map((e) => ({ key: e.key, value: Buffer.from(e.value).toString(), headers: e.headers }));
  });
}

describe("packEvents / unpackEvents", () => {
  it("packs several events into one record and reads back their keys, values and headers in order", () => {
    const events: PackableEvent[] = [
      { key: "eml_1", value: bytes("first"), headers: { "event-id": "evt_1", "event-type": "email.status" } },
      { key: "ключ-ü", value: new Uint8Array(0), headers: {} },
      { key: "", value: bytes("no headers at all") },
      { key: "eml_1", value: new Uint8Array([0, 255, 1, 254]), headers: { traceparent: "00-ab-cd-01", "é": "ü ✓" } },
    ];
    const records = packEvents(events);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ packed: true, events: 4 });
    const back = unpackEvents((records[0] as { value: Buffer }).value)!;
    expect(back.map((e) => e.key)).toEqual(["eml_1", "ключ-ü", "", "eml_1"]);
    expect(back.map((e) => Array.from(e.value))).toEqual(events.map((e) => Array.from(e.value)));
    expect(back.map((e) => e.headers)).toEqual([events[0]!.headers, {}, {}, events[3]!.headers]);
  });

  it("leaves a lone event as a plain record", () => {
    const event = { key: "k", value: bytes("alone") };
    expect(packEvents([event])).toEqual([{ packed: false, event }]);
    expect(packEvents([])).toEqual([]);
  });

  it("cuts packs at maxBytes and sends an event too large for a pack on its own, keeping the order", () => {
    const events = Array.from({ length: 30 }, (_, i) => ({ key: `k${i % 3}`, value: bytes(i === 17 ? "x".repeat(500) : `event-${i}`) }));
    const records = packEvents(events, 120);
    // Each pack within the bound; the large one plain; nothing lost, nothing reordered.
    for (const record of records) if (record.packed) expect(record.value.byteLength).toBeLessThanOrEqual(120);
    expect(records.filter((r) => !r.packed).map((r) => (r as { event: PackableEvent }).event)).toContain(events[17]);
    expect(records.length).toBeGreaterThan(3);
    expect(records.length).toBeLessThan(30);
    expect(readBack(records).map((e) => e.value)).toEqual(events.map((e) => Buffer.from(e.value).toString()));
  });

  it("refuses an event that carries the reserved pack header", () => {
    expect(() => packEvents([{ key: "k", value: bytes("v"), headers: { [PACK_HEADER]: "1" } }])).toThrow(/reserved/);
  });

  it("finds no events in bytes that are not a whole pack", () => {
    const records = packEvents([
      { key: "a", value: bytes("one"), headers: { h: "v" } },
      { key: "b", value: bytes("two") },
    ]);
    const whole = (records[0] as { value: Buffer }).value;
    expect(unpackEvents(whole)).toHaveLength(2);
    expect(unpackEvents(Buffer.alloc(0))).toBeUndefined();
    // Every truncation, and bytes left over after the last event.
    for (let cut = 1; cut < whole.byteLength; cut++) expect(unpackEvents(whole.subarray(0, cut))).toBeUndefined();
    expect(unpackEvents(Buffer.concat([whole, Buffer.from([0])]))).toBeUndefined();
    // A length running past the end.
    const broken = Buffer.from(whole);
    broken.writeUInt32BE(0xffffffff, 0);
    expect(unpackEvents(broken)).toBeUndefined();
    expect(unpackEvents(Buffer.from("not a pack, just text"))).toBeUndefined();
  });
});
