// A batch of events as one buffer, for the MessagePort between a worker
// thread's PortEventBus and the bus the main thread serves (port-bus.ts).
// postMessage would otherwise structured-clone every event: an object, its
// key and header strings, and a copy of its value's bytes, serialized on one
// thread and rebuilt on the other, for each event of every batch. Packed, a
// batch is one ArrayBuffer moved across (transferred, not copied), and the
// receiving side reads the values as views of it.
//
//   u32 event count, then per event:
//     u32 key length, key (UTF-8)
//     u16 header count, then per header: u16 name length, name, u32 value length, value (UTF-8)
//     u32 value length, value
//
// Little-endian; the buffer never leaves the process.

import type { ReceivedEvent } from "./types.js";

/** The parts of an event that cross the port (the topic travels once per batch). */
export interface PortEvent {
  key: string;
  value: Uint8Array;
  headers?: Record<string, string> | undefined;
}

/**
 * Packs `events` into one buffer, or answers undefined when one of them is not
 * a well-formed event (a key that is not a string, a value that is not a
 * Uint8Array, a header value that is not a string, too many headers or too
 * long a header name): the caller then sends the batch as it is, and the
 * bus refuses it with its own error.
 */
export function packEvents(events: readonly PortEvent[]): ArrayBuffer | undefined {
  let size = 4;
  for (const event of events) {
    if (typeof event.key !== "string" || !(event.value instanceof Uint8Array)) return undefined;
    size += 4 + Buffer.byteLength(event.key, "utf8") + 2 + 4 + event.value.length;
    const headers = event.headers;
    if (headers !== undefined) {
      if (typeof headers !== "object" || headers === null) return undefined;
      let count = 0;
      for (const name of Object.keys(headers)) {
        const value = headers[name];
        if (typeof value !== "string") return undefined;
        const nameLength = Buffer.byteLength(name, "utf8");
        if (nameLength > 0xffff) return undefined;
        size += 2 + nameLength + 4 + Buffer.byteLength(value, "utf8");
        count += 1;
      }
      if (count > 0xffff) return undefined;
    }
  }
  const data = new ArrayBuffer(size);
  const bytes = Buffer.from(data);
  let at = bytes.writeUInt32LE(events.length, 0);
  for (const event of events) {
    const keyLength = bytes.write(event.key, at + 4, "utf8");
    bytes.writeUInt32LE(keyLength, at);
    at += 4 + keyLength;
    const countAt = at;
    at += 2;
    let count = 0;
    const headers = event.headers;
    if (headers !== undefined) {
      for (const name of Object.keys(headers)) {
        const nameLength = bytes.write(name, at + 2, "utf8");
        bytes.writeUInt16LE(nameLength, at);
        at += 2 + nameLength;
        const valueLength = bytes.write(headers[name]!, at + 4, "utf8");
        bytes.writeUInt32LE(valueLength, at);
        at += 4 + valueLength;
        count += 1;
      }
    }
    bytes.writeUInt16LE(count, countAt);
    at = bytes.writeUInt32LE(event.value.length, at);
    bytes.set(event.value, at);
    at += event.value.length;
  }
  return data;
}

/** The events of a packed batch of `topic`; each value is a view of `data`, which the caller must not reuse. */
export function unpackEvents(data: ArrayBuffer, topic: string): ReceivedEvent[] {
  const bytes = Buffer.from(data);
  const count = bytes.readUInt32LE(0);
  const events = new Array<ReceivedEvent>(count);
  let at = 4;
  for (let i = 0; i < count; i++) {
    const keyLength = bytes.readUInt32LE(at);
    const key = bytes.toString("utf8", at + 4, at + 4 + keyLength);
    at += 4 + keyLength;
    const headerCount = bytes.readUInt16LE(at);
    at += 2;
    const headers: Record<string, string> = {};
    for (let h = 0; h < headerCount; h++) {
      const nameLength = bytes.readUInt16LE(at);
      const name = bytes.toString("utf8", at + 2, at + 2 + nameLength);
      at += 2 + nameLength;
      const valueLength = bytes.readUInt32LE(at);
      headers[name] = bytes.toString("utf8", at + 4, at + 4 + valueLength);
      at += 4 + valueLength;
    }
    const valueLength = bytes.readUInt32LE(at);
    events[i] = { topic, key, value: new Uint8Array(data, at + 4, valueLength), headers };
    at += 4 + valueLength;
  }
  return events;
}
