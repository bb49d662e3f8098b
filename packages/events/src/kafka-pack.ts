// Events packed into Kafka records: the events of one `publish` that go to
// one partition travel as one record (up to PACK_MAX_BYTES), not a record
// each. kafkajs spends some 10-25 µs of CPU on every record it encodes or
// decodes (varints, headers, the partitioner, its request objects) and the
// broker validates each, so per-event records were most of what the Kafka path
// cost one process per service (bench/README.md, "Packed records"). The
// events keep their keys, headers and order: a pack holds consecutive events
// of one partition, and the consumer unpacks them before any handler sees
// them. A record without the marker header is one event, as before (records
// written by earlier versions, or a lone event).

/** Header marking a record as a pack (value PACK_VERSION); reserved: a published event may not carry it. */
export const PACK_HEADER = "emailsvc-pack";
/** The pack format below; another value is not unpacked (the record is then handed over as one undecodable event). */
export const PACK_VERSION = "1";
/**
 * Largest pack value. Well under the broker's default `message.max.bytes` (1 MiB
 * for a record batch): a publish's events of a partition beyond this go in
 * several records. An event larger than this goes alone, as a plain record.
 */
export const PACK_MAX_BYTES = 256 * 1024;

/** One event as published: key, value, headers. */
export interface PackableEvent {
  key: string;
  value: Uint8Array;
  headers?: Record<string, string>;
}

/** One event read back from a pack; `value` is a view on the record's bytes (copy it before keeping it). */
export interface UnpackedEvent {
  key: string;
  value: Uint8Array;
  headers: Record<string, string>;
}

/** A Kafka record to produce: a pack of several events, or one event as it is. */
export type PackedRecord = { packed: true; value: Buffer; events: number } | { packed: false; event: PackableEvent };

// Format, version 1: u32 event count, then the events one after another, each
//   u32 key length, key (UTF-8),
//   u16 header count, per header u32 name length, name, u32 value length, value (UTF-8),
//   u32 value length, value.
// Big-endian numbers; nothing after the last event (the count makes a pack cut
// at an event's end detectable).

/** Bytes of a pack before its events: the count. */
const PACK_PREFIX_BYTES = 4;

/** Bytes `event` takes in a pack. */
function packedSize(event: PackableEvent): number {
  let size = 4 + Buffer.byteLength(event.key) + 2 + 4 + event.value.byteLength;
  if (event.headers) {
    for (const name of Object.keys(event.headers)) size += 8 + Buffer.byteLength(name) + Buffer.byteLength(event.headers[name]!);
  }
  return size;
}

/**
 * The records for consecutive events of one partition, in order: runs of two
 * or more events packed (each pack at most `maxBytes`), a lone event or one
 * too large for a pack as a plain record.
 */
export function packEvents(events: readonly PackableEvent[], maxBytes = PACK_MAX_BYTES): PackedRecord[] {
  const records: PackedRecord[] = [];
  let run: PackableEvent[] = [];
  let runBytes = PACK_PREFIX_BYTES;
  const flush = () => {
    if (run.length === 1) records.push({ packed: false, event: run[0]! });
    else if (run.length > 1) records.push({ packed: true, value: writePack(run, runBytes), events: run.length });
    run = [];
    runBytes = PACK_PREFIX_BYTES;
  };
  for (const event of events) {
    if (event.headers && PACK_HEADER in event.headers) throw new Error(`the ${PACK_HEADER} header is reserved for the Kafka adapter`);
    const size = packedSize(event);
    if (PACK_PREFIX_BYTES + size > maxBytes) {
      flush();
      records.push({ packed: false, event });
      continue;
    }
    if (runBytes + size > maxBytes) flush();
    run.push(event);
    runBytes += size;
  }
  flush();
  return records;
}

function writePack(events: readonly PackableEvent[], size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32BE(events.length, 0);
  let at = PACK_PREFIX_BYTES;
  const writeString = (text: string) => {
    const length = out.write(text, at + 4, "utf8");
    out.writeUInt32BE(length, at);
    at += 4 + length;
  };
  for (const event of events) {
    writeString(event.key);
    const names = event.headers ? Object.keys(event.headers) : [];
    out.writeUInt16BE(names.length, at);
    at += 2;
    for (const name of names) {
      writeString(name);
      writeString(event.headers![name]!);
    }
    out.writeUInt32BE(event.value.byteLength, at);
    out.set(event.value, at + 4);
    at += 4 + event.value.byteLength;
  }
  if (at !== size) throw new Error(`pack size mismatch: wrote ${at} of ${size} bytes`);
  return out;
}

/**
 * The events of a pack, in order; undefined when `value` is not a well-formed
 * pack of at least one event (fewer or more events than its count, lengths
 * running past its end, bytes left over).
 */
export function unpackEvents(value: Buffer): UnpackedEvent[] | undefined {
  const events: UnpackedEvent[] = [];
  const end = value.byteLength;
  if (end < PACK_PREFIX_BYTES) return undefined;
  const count = value.readUInt32BE(0);
  let at = PACK_PREFIX_BYTES;
  const readLength = (width: 2 | 4): number | undefined => {
    if (at + width > end) return undefined;
    const length = width === 2 ? value.readUInt16BE(at) : value.readUInt32BE(at);
    at += width;
    return length;
  };
  const readString = (): string | undefined => {
    const length = readLength(4);
    if (length === undefined || at + length > end) return undefined;
    const text = value.toString("utf8", at, at + length);
    at += length;
    return text;
  };
  while (at < end && events.length < count) {
    const key = readString();
    const headerCount = readLength(2);
    if (key === undefined || headerCount === undefined) return undefined;
    const headers: Record<string, string> = {};
    for (let i = 0; i < headerCount; i++) {
      const name = readString();
      const headerValue = readString();
      if (name === undefined || headerValue === undefined) return undefined;
      headers[name] = headerValue;
    }
    const length = readLength(4);
    if (length === undefined || at + length > end) return undefined;
    events.push({ key, value: value.subarray(at, at + length), headers });
    at += length;
  }
  return events.length > 0 && events.length === count && at === end ? events : undefined;
}
