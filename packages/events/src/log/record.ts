// The on-disk record of the durable in-process bus: one event of one
// partition, length-prefixed and checksummed, so that a reader finds where
// each record ends and can tell a whole record from a torn or damaged one.
//
//   u32  body length (bytes after this 8-byte prefix)
//   u32  CRC-32 (IEEE, zlib's) of the body
//   body:
//     u8   format version (1)
//     u8   flags (0; reserved)
//     u32  offset, high 32 bits      the record's offset in its partition,
//     u32  offset, low 32 bits       checked against its place in the log
//     f64  publish time (ms since the epoch)
//     u32  key length, key (UTF-8)
//     u16  header count, then per header:
//            u16 name length, name (UTF-8), u32 value length, value (UTF-8)
//     u32  value length, value
//
// All integers big-endian. The record is encoded once at `publish` (which also
// copies the caller's bytes); offset and CRC are filled in when the writer
// knows the offset.

import { crc32 } from "node:zlib";
import type { OutgoingEvent } from "../types.js";

export const RECORD_PREFIX_BYTES = 8;
const FORMAT_VERSION = 1;
/** Version, flags, offset, time, key length, header count, value length. */
const MIN_BODY_BYTES = 1 + 1 + 8 + 8 + 4 + 2 + 4;
const OFFSET_AT = RECORD_PREFIX_BYTES + 2;
/** Where the key's length sits in the body: after version, flags, offset and time. */
const KEY_AT = 1 + 1 + 8 + 8;
const TWO_32 = 2 ** 32;
/**
 * Largest body a reader accepts as a record. Larger than any event `publish`
 * lets through (MAX_EVENT_BYTES), so that lowering that limit never makes old
 * records look damaged; a length beyond it is damage.
 */
const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** The most an event (key, value, headers) may take once encoded, as Kafka's default 1 MB. */
export const MAX_EVENT_BYTES = 1024 * 1024;

/** One event as the bus hands it to consumers, with its place in the partition. */
export interface LoggedEvent {
  offset: number;
  key: string;
  value: Uint8Array;
  headers: Record<string, string>;
}

/**
 * Throws unless the event can be published: a string key, a Uint8Array value,
 * string headers, and at most MAX_EVENT_BYTES in all. Checked for every event
 * of a batch before any of it is appended (all or nothing), by both kinds of
 * in-process log, so that the memory-only bus refuses what the durable one would.
 */
export function checkEvent(event: OutgoingEvent): void {
  if (typeof event.key !== "string" || !(event.value instanceof Uint8Array)) {
    throw new TypeError("an event needs a string key and a Uint8Array value");
  }
  let bytes = Buffer.byteLength(event.key, "utf8") + event.value.length;
  const headers = Object.entries(event.headers ?? {});
  if (headers.length > 0xffff) throw new RangeError("an event may carry at most 65535 headers");
  for (const [name, value] of headers) {
    if (typeof value !== "string") throw new TypeError(`header ${JSON.stringify(name)} must be a string`);
    const nameBytes = Buffer.byteLength(name, "utf8");
    if (nameBytes > 0xffff) throw new RangeError("a header name may take at most 65535 bytes");
    bytes += nameBytes + Buffer.byteLength(value, "utf8");
  }
  if (bytes > MAX_EVENT_BYTES) throw new RangeError(`an event (key, value and headers) may take at most ${MAX_EVENT_BYTES} bytes`);
}

/**
 * Encodes an event (checked by checkEvent) as a record without offset and checksum (see `seal`).
 * The result holds copies of the key, value and headers.
 */
export function encodeRecord(event: OutgoingEvent, now: number): Buffer {
  const headers = event.headers ?? {};
  const names = Object.keys(headers);
  const keyLength = Buffer.byteLength(event.key, "utf8");
  let size = RECORD_PREFIX_BYTES + MIN_BODY_BYTES + keyLength + event.value.length;
  for (const name of names) size += 2 + Buffer.byteLength(name, "utf8") + 4 + Buffer.byteLength(headers[name]!, "utf8");
  // The strings are written straight into the record (no Buffer of their own first).
  const record = Buffer.allocUnsafe(size);
  let at = record.writeUInt32BE(size - RECORD_PREFIX_BYTES, 0);
  at = record.writeUInt32BE(0, at); // CRC, set by seal
  at = record.writeUInt8(FORMAT_VERSION, at);
  at = record.writeUInt8(0, at);
  at = record.writeUInt32BE(0, at); // offset, set by seal
  at = record.writeUInt32BE(0, at);
  at = record.writeDoubleBE(now, at);
  at = record.writeUInt32BE(keyLength, at);
  at += record.write(event.key, at, "utf8");
  at = record.writeUInt16BE(names.length, at);
  for (const name of names) {
    const nameLength = record.write(name, at + 2, "utf8");
    record.writeUInt16BE(nameLength, at);
    at += 2 + nameLength;
    const valueLength = record.write(headers[name]!, at + 4, "utf8");
    record.writeUInt32BE(valueLength, at);
    at += 4 + valueLength;
  }
  at = record.writeUInt32BE(event.value.length, at);
  record.set(event.value, at);
  return record;
}

/**
 * The event a record encoded from `event` holds, without decoding it again: the
 * key, a copy of the headers, and the value as a view of the record (the last
 * field), which must not change after.
 */
export function recordView(event: OutgoingEvent, record: Buffer): LoggedEvent {
  const headers: Record<string, string> = {};
  const given = event.headers;
  if (given !== undefined) for (const name of Object.keys(given)) headers[name] = given[name]!;
  const length = event.value.length;
  return { offset: 0, key: event.key, value: new Uint8Array(record.buffer, record.byteOffset + record.length - length, length), headers };
}

/** Writes the offset into an encoded record and checksums it. */
export function seal(record: Buffer, offset: number): void {
  record.writeUInt32BE(Math.floor(offset / TWO_32), OFFSET_AT);
  record.writeUInt32BE(offset % TWO_32, OFFSET_AT + 4);
  record.writeUInt32BE(crc32(record.subarray(RECORD_PREFIX_BYTES)), 4);
}

/**
 * The length of the whole record at `at` in `data`, if one is there: complete,
 * its checksum right, its offset the expected one and its fields fitting its
 * length exactly. Otherwise undefined: the end of the valid log (a torn write
 * after a crash, zeros after a power loss, or damage).
 */
export function checkRecord(data: Buffer, at: number, expectedOffset: number): number | undefined {
  if (at + RECORD_PREFIX_BYTES > data.length) return undefined;
  const bodyLength = data.readUInt32BE(at);
  if (bodyLength < MIN_BODY_BYTES || bodyLength > MAX_BODY_BYTES) return undefined;
  const end = at + RECORD_PREFIX_BYTES + bodyLength;
  if (end > data.length) return undefined;
  const body = data.subarray(at + RECORD_PREFIX_BYTES, end);
  if (crc32(body) !== data.readUInt32BE(at + 4)) return undefined;
  if (body[0] !== FORMAT_VERSION) return undefined;
  if (body.readUInt32BE(2) * TWO_32 + body.readUInt32BE(6) !== expectedOffset) return undefined;
  return fieldsFit(body) ? end - at : undefined;
}

/** The publish time (ms) of the record starting at `at` (a whole record, as checkRecord found it). */
export function recordTime(data: Buffer, at: number): number {
  return data.readDoubleBE(at + RECORD_PREFIX_BYTES + KEY_AT - 8);
}

/** Walks the body's length fields: they must add up to the body's length exactly. */
function fieldsFit(body: Buffer): boolean {
  let at = KEY_AT;
  const take = (n: number): boolean => {
    at += n;
    return at <= body.length;
  };
  if (!take(4) || !take(body.readUInt32BE(at - 4))) return false;
  if (!take(2)) return false;
  const headers = body.readUInt16BE(at - 2);
  for (let i = 0; i < headers; i++) {
    if (!take(2) || !take(body.readUInt16BE(at - 2))) return false;
    if (!take(4) || !take(body.readUInt32BE(at - 4))) return false;
  }
  if (!take(4) || !take(body.readUInt32BE(at - 4))) return false;
  return at === body.length;
}

/**
 * Decodes the records of `data` (whole records only, as written), checking each
 * as `checkRecord` does. Throws on a damaged record: data that was whole when
 * the log was opened and is damaged now is a disk fault, not a torn write.
 */
export function decodeRecords(data: Buffer, firstOffset: number): LoggedEvent[] {
  const events: LoggedEvent[] = [];
  let at = 0;
  let offset = firstOffset;
  while (at < data.length) {
    const length = checkRecord(data, at, offset);
    if (length === undefined) throw new Error(`damaged record at offset ${offset}`);
    events.push(decodeBody(data, at + RECORD_PREFIX_BYTES, offset));
    at += length;
    offset += 1;
  }
  return events;
}

function decodeBody(data: Buffer, start: number, offset: number): LoggedEvent {
  let at = start + KEY_AT;
  /** The next length-prefixed field (u16 or u32 length), as [start, end) in data. */
  const field = (lengthBytes: 2 | 4): [number, number] => {
    const length = lengthBytes === 2 ? data.readUInt16BE(at) : data.readUInt32BE(at);
    at += lengthBytes + length;
    return [at - length, at];
  };
  const key = data.toString("utf8", ...field(4));
  const headerCount = data.readUInt16BE(at);
  at += 2;
  const headers: Record<string, string> = {};
  for (let i = 0; i < headerCount; i++) {
    const name = data.toString("utf8", ...field(2));
    headers[name] = data.toString("utf8", ...field(4));
  }
  const [valueStart, valueEnd] = field(4);
  // A view into the read buffer; consumers hand each handler call its own copy.
  const value = new Uint8Array(data.buffer, data.byteOffset + valueStart, valueEnd - valueStart);
  return { offset, key, value, headers };
}
