// The wire primitives the compiled codecs (compile.ts) call: a writer over one
// scratch buffer kept between messages, and a reader. Each reads and writes
// exactly as @bufbuild/protobuf's BinaryWriter and BinaryReader do (same bytes,
// same bounds checks, same leniency), since a compiled codec must agree with
// toBinary and fromBinary on every input; the property test of the registry
// (test/codec.test.ts) holds them to it. What they save is the per-message
// allocation of growing buffers, the per-field closures and the tag arrays.

/** Thrown by a compiled encoder for a value it does not take as is: the message then goes through toBinary. */
export const UNSUPPORTED: unique symbol = Symbol("unsupported value");

export interface Writer {
  buf: Uint8Array;
  pos: number;
}

const SCRATCH_BYTES = 4096;
/** A scratch buffer grown past this for one big message is dropped after it (not kept for ever). */
const SCRATCH_KEPT_BYTES = 1 << 20;

export const writer: Writer = { buf: new Uint8Array(SCRATCH_BYTES), pos: 0 };

/** The bytes written since `start`, in a buffer of their own, and the scratch made ready for the next message. */
export function finish(w: Writer): Uint8Array {
  const out = w.buf.slice(0, w.pos);
  if (w.buf.length > SCRATCH_KEPT_BYTES) w.buf = new Uint8Array(SCRATCH_BYTES);
  w.pos = 0;
  return out;
}

export function ensure(w: Writer, bytes: number): void {
  if (w.pos + bytes <= w.buf.length) return;
  let size = w.buf.length * 2;
  while (size < w.pos + bytes) size *= 2;
  const grown = new Uint8Array(size);
  grown.set(w.buf.subarray(0, w.pos));
  w.buf = grown;
}

export function varint32Size(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

/** An unsigned 32-bit varint (the caller checked `value >>> 0 === value`). */
export function uint32(w: Writer, value: number): void {
  ensure(w, 5);
  const buf = w.buf;
  let pos = w.pos;
  while (value > 0x7f) {
    buf[pos++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buf[pos++] = value;
  w.pos = pos;
}

/** A signed 32-bit varint: negative values take ten bytes, sign-extended to 64 bits. */
export function int32(w: Writer, value: number): void {
  if (value >= 0) return uint32(w, value);
  ensure(w, 10);
  const buf = w.buf;
  let pos = w.pos;
  for (let i = 0; i < 9; i++) {
    buf[pos++] = (value & 0x7f) | 0x80;
    value >>= 7;
  }
  buf[pos++] = 1;
  w.pos = pos;
}

export function sint32(w: Writer, value: number): void {
  uint32(w, ((value << 1) ^ (value >> 31)) >>> 0);
}

export function byte(w: Writer, value: number): void {
  ensure(w, 1);
  w.buf[w.pos++] = value;
}

/** A 64-bit varint given as its two's complement halves. */
export function varint64(w: Writer, lo: number, hi: number): void {
  ensure(w, 10);
  const buf = w.buf;
  let pos = w.pos;
  for (let i = 0; i < 28; i = i + 7) {
    const shift = lo >>> i;
    const hasNext = !(shift >>> 7 == 0 && hi == 0);
    buf[pos++] = (hasNext ? shift | 0x80 : shift) & 0xff;
    if (!hasNext) {
      w.pos = pos;
      return;
    }
  }
  const splitBits = ((lo >>> 28) & 0x0f) | ((hi & 0x07) << 4);
  const hasMoreBits = !(hi >> 3 == 0);
  buf[pos++] = (hasMoreBits ? splitBits | 0x80 : splitBits) & 0xff;
  if (hasMoreBits) {
    for (let i = 3; i < 31; i = i + 7) {
      const shift = hi >>> i;
      const hasNext = !(shift >>> 7 == 0);
      buf[pos++] = (hasNext ? shift | 0x80 : shift) & 0xff;
      if (!hasNext) {
        w.pos = pos;
        return;
      }
    }
    buf[pos++] = (hi >>> 31) & 0x01;
  }
  w.pos = pos;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const TWO_32 = 4294967296;

/** The halves of a signed 64-bit value (throws UNSUPPORTED for anything but an in-range bigint). */
function halves(value: unknown, signed: boolean): void {
  if (typeof value !== "bigint" || value > (signed ? INT64_MAX : UINT64_MAX) || value < (signed ? INT64_MIN : 0n)) throw UNSUPPORTED;
  if (value >= -9007199254740991n && value <= 9007199254740991n) {
    // Most 64-bit values (seconds of a timestamp) fit a double: no bigint arithmetic.
    const n = Number(value);
    const hi = Math.floor(n / TWO_32);
    split.lo = (n - hi * TWO_32) | 0;
    split.hi = hi | 0;
    return;
  }
  const u = BigInt.asUintN(64, value);
  split.lo = Number(u & 0xffffffffn) | 0;
  split.hi = Number(u >> 32n) | 0;
}
const split = { lo: 0, hi: 0 };

export function int64(w: Writer, value: unknown, signed: boolean): void {
  halves(value, signed);
  varint64(w, split.lo, split.hi);
}

export function sint64(w: Writer, value: unknown): void {
  halves(value, true);
  const { lo, hi } = split;
  const sign = hi >> 31;
  varint64(w, (lo << 1) ^ sign, ((hi << 1) | (lo >>> 31)) ^ sign);
}

export function fixed64(w: Writer, value: unknown, signed: boolean): void {
  halves(value, signed);
  fixed32(w, split.lo);
  fixed32(w, split.hi);
}

export function fixed32(w: Writer, value: number): void {
  ensure(w, 4);
  const buf = w.buf;
  const pos = w.pos;
  buf[pos] = value & 0xff;
  buf[pos + 1] = (value >>> 8) & 0xff;
  buf[pos + 2] = (value >>> 16) & 0xff;
  buf[pos + 3] = (value >>> 24) & 0xff;
  w.pos = pos + 4;
}

const floatBytes = new DataView(new ArrayBuffer(8));
const FLOAT32_MAX = 3.4028234663852886e38;

export function float(w: Writer, value: number): void {
  if (Number.isFinite(value) && (value > FLOAT32_MAX || value < -FLOAT32_MAX)) throw UNSUPPORTED;
  floatBytes.setFloat32(0, value, true);
  fixed32(w, floatBytes.getUint32(0, true));
}

export function double(w: Writer, value: number): void {
  floatBytes.setFloat64(0, value, true);
  fixed32(w, floatBytes.getUint32(0, true));
  fixed32(w, floatBytes.getUint32(4, true));
}

const textEncoder = new TextEncoder();

/** A length-delimited UTF-8 string; lone surrogates become U+FFFD, as TextEncoder writes them. */
export function string(w: Writer, value: string): void {
  const len = value.length;
  ensure(w, len * 3 + 5);
  const buf = w.buf;
  const start = w.pos;
  if (len < 0x80) {
    // Ids and statuses are ASCII: one byte per character, a one-byte length.
    let pos = start + 1;
    let i = 0;
    for (; i < len; i++) {
      const code = value.charCodeAt(i);
      if (code > 0x7f) break;
      buf[pos++] = code;
    }
    if (i === len) {
      buf[start] = len;
      w.pos = pos;
      return;
    }
  }
  // The UTF-8 length is known once written: guess the prefix from the UTF-16
  // length (never more bytes than UTF-8's) and move the text if it was short.
  const guess = varint32Size(len);
  const { written } = textEncoder.encodeInto(value, buf.subarray(start + guess));
  const prefix = varint32Size(written);
  if (prefix !== guess) buf.copyWithin(start + prefix, start + guess, start + guess + written);
  uint32(w, written);
  w.pos += written;
}

export function bytes(w: Writer, value: Uint8Array): void {
  uint32(w, value.byteLength);
  ensure(w, value.byteLength);
  w.buf.set(value, w.pos);
  w.pos += value.byteLength;
}

/** Reserves one byte for the length of what follows (a message, a packed list, a map entry); see join. */
export function fork(w: Writer): number {
  ensure(w, 1);
  return w.pos++;
}

/** Writes the length of what was written since `fork`, moving it when the length takes more than one byte. */
export function join(w: Writer, at: number): void {
  const len = w.pos - at - 1;
  if (len < 0x80) {
    w.buf[at] = len;
    return;
  }
  const size = varint32Size(len);
  ensure(w, size - 1);
  w.buf.copyWithin(at + size, at + 1, w.pos);
  const end = w.pos + size - 1;
  w.pos = at;
  uint32(w, len);
  w.pos = end;
}

/** Unknown fields kept from decoding, written back after the known ones as toBinary does. */
export function unknownFields(w: Writer, fields: unknown): void {
  if (!Array.isArray(fields)) throw UNSUPPORTED;
  for (const field of fields as Array<{ no: unknown; wireType: unknown; data: unknown }>) {
    const { no, wireType, data } = field;
    if (typeof no !== "number" || typeof wireType !== "number" || !(data instanceof Uint8Array)) throw UNSUPPORTED;
    uint32(w, ((no << 3) | wireType) >>> 0);
    ensure(w, data.byteLength);
    w.buf.set(data, w.pos);
    w.pos += data.byteLength;
  }
}

// Reading. Every read past the end throws RangeError("premature EOF"), as
// BinaryReader's bounds check does after the read.

export interface Reader {
  buf: Uint8Array;
  pos: number;
  len: number;
  /** Halves of the last 64-bit varint read. */
  lo: number;
  hi: number;
  view: DataView | undefined;
}

export function reader(buf: Uint8Array): Reader {
  return { buf, pos: 0, len: buf.length, lo: 0, hi: 0, view: undefined };
}

function eof(): never {
  throw new RangeError("premature EOF");
}

/** An unsigned 32-bit varint (up to ten bytes, the low 32 bits kept), as varint32read. */
export function readUint32(r: Reader): number {
  const buf = r.buf;
  const len = r.len;
  let pos = r.pos;
  if (pos >= len) eof();
  let b = buf[pos++]!;
  if ((b & 0x80) === 0) {
    r.pos = pos;
    return b;
  }
  let result = b & 0x7f;
  for (let shift = 7; shift < 28; shift += 7) {
    if (pos >= len) eof();
    b = buf[pos++]!;
    result |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) {
      r.pos = pos;
      return result;
    }
  }
  if (pos >= len) eof();
  b = buf[pos++]!;
  result |= (b & 0x0f) << 28;
  for (let read = 5; (b & 0x80) !== 0 && read < 10; read++) {
    if (pos >= len) eof();
    b = buf[pos++]!;
  }
  if ((b & 0x80) !== 0) throw new Error("invalid varint");
  r.pos = pos;
  return result >>> 0;
}

/** A tag as `fieldNo << 3 | wireType` (unsigned), checked as BinaryReader.tag checks it. */
export function readTag(r: Reader): number {
  const start = r.pos;
  const tag = readUint32(r);
  const read = r.pos - start;
  if (read > 5 || (read == 5 && r.buf[r.pos - 1]! > 0x0f)) throw new Error("illegal tag: varint overflows uint32");
  const fieldNo = tag >>> 3;
  const wireType = tag & 7;
  if (fieldNo <= 0 || wireType > 5) throw new Error("illegal tag: field no " + fieldNo + " wire type " + wireType);
  return tag >>> 0;
}

/** A 64-bit varint into r.lo and r.hi, as varint64read. */
export function readVarint64(r: Reader): void {
  const buf = r.buf;
  const len = r.len;
  let pos = r.pos;
  let lo = 0;
  let hi = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= len) eof();
    const b = buf[pos++]!;
    lo |= (b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      r.pos = pos;
      r.lo = lo;
      r.hi = hi;
      return;
    }
  }
  if (pos >= len) eof();
  const middle = buf[pos++]!;
  lo |= (middle & 0x0f) << 28;
  hi = (middle & 0x70) >> 4;
  if ((middle & 0x80) == 0) {
    r.pos = pos;
    r.lo = lo;
    r.hi = hi;
    return;
  }
  for (let shift = 3; shift <= 31; shift += 7) {
    if (pos >= len) eof();
    const b = buf[pos++]!;
    hi |= (b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      r.pos = pos;
      r.lo = lo;
      r.hi = hi;
      return;
    }
  }
  throw new Error("invalid varint");
}

export function readInt64(r: Reader): bigint {
  readVarint64(r);
  return signed64(r.lo, r.hi);
}

export function readUint64(r: Reader): bigint {
  readVarint64(r);
  return unsigned64(r.lo, r.hi);
}

export function readSint64(r: Reader): bigint {
  readVarint64(r);
  const s = -(r.lo & 1);
  return signed64(((r.lo >>> 1) | ((r.hi & 1) << 31)) ^ s, (r.hi >>> 1) ^ s);
}

function signed64(lo: number, hi: number): bigint {
  hi |= 0;
  if (hi >= -0x200000 && hi < 0x200000) return BigInt(hi * TWO_32 + (lo >>> 0));
  return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));
}

function unsigned64(lo: number, hi: number): bigint {
  hi >>>= 0;
  if (hi < 0x200000) return BigInt(hi * TWO_32 + (lo >>> 0));
  return (BigInt(hi) << 32n) | BigInt(lo >>> 0);
}

export function readBool(r: Reader): boolean {
  const pos = r.pos;
  if (pos < r.len) {
    const b = r.buf[pos]!;
    if (b < 0x80) {
      r.pos = pos + 1;
      return b !== 0;
    }
  }
  readVarint64(r);
  return r.lo !== 0 || r.hi !== 0;
}

function fixedAt(r: Reader, size: number): number {
  const pos = r.pos;
  if (pos + size > r.len) throw new RangeError("Offset is outside the bounds of the DataView");
  r.pos = pos + size;
  return pos;
}

export function readFixed32(r: Reader): number {
  const pos = fixedAt(r, 4);
  const buf = r.buf;
  return (buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16) | (buf[pos + 3]! << 24)) >>> 0;
}

export function readSfixed32(r: Reader): number {
  return readFixed32(r) | 0;
}

export function readFixed64(r: Reader, signed: boolean): bigint {
  const lo = readFixed32(r);
  const hi = readFixed32(r);
  return signed ? signed64(lo, hi) : unsigned64(lo, hi);
}

function view(r: Reader): DataView {
  return (r.view ??= new DataView(r.buf.buffer, r.buf.byteOffset, r.buf.byteLength));
}

export function readFloat(r: Reader): number {
  return view(r).getFloat32(fixedAt(r, 4), true);
}

export function readDouble(r: Reader): number {
  return view(r).getFloat64(fixedAt(r, 8), true);
}

export function readBytes(r: Reader): Uint8Array {
  const len = readUint32(r);
  const start = r.pos;
  r.pos += len;
  if (r.pos > r.len) eof();
  return r.buf.subarray(start, start + len);
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const laxDecoder = new TextDecoder();

/**
 * Node's own Latin-1 slice of a byte range, a third of the cost of building
 * the string in script; checked once, with a script fallback where missing.
 */
const latin1Slice = ((): ((this: Uint8Array, start: number, end: number) => string) | undefined => {
  const slice = (Buffer.prototype as unknown as { latin1Slice?: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;
  try {
    return typeof slice === "function" && slice.call(new Uint8Array([0x61, 0x62, 0x63]), 1, 3) === "bc" ? slice : undefined;
  } catch {
    return undefined;
  }
})();

/** A length-delimited UTF-8 string; `strict` rejects invalid UTF-8 (proto3's validation) where lax replaces it. */
export function readString(r: Reader, strict: boolean): string {
  const len = readUint32(r);
  const start = r.pos;
  const end = start + len;
  r.pos = end;
  if (end > r.len) eof();
  const buf = r.buf;
  let i = start;
  while (i < end && buf[i]! < 0x80) i++;
  if (i < end) return (strict ? strictDecoder : laxDecoder).decode(buf.subarray(start, end));
  if (latin1Slice !== undefined && len > 8) return latin1Slice.call(buf, start, end);
  let text = "";
  for (let j = start; j < end; j++) text += String.fromCharCode(buf[j]!);
  return text;
}

export interface UnknownField {
  no: number;
  wireType: number;
  data: Uint8Array;
}

/** Skips one value of a field the message does not declare and returns its bytes, as BinaryReader.skip. */
export function skip(r: Reader, wireType: number, fieldNo: number, recursionLimit: number): Uint8Array {
  const start = r.pos;
  switch (wireType) {
    case 0:
      for (;;) {
        if (r.pos >= r.len) eof();
        if ((r.buf[r.pos++]! & 0x80) === 0) break;
      }
      break;
    case 1:
      r.pos += 8;
      break;
    case 5:
      r.pos += 4;
      break;
    case 2: {
      const len = readUint32(r);
      r.pos += len;
      break;
    }
    case 3:
      if (recursionLimit <= 0) throw new Error("maximum recursion depth reached");
      for (;;) {
        const tag = readTag(r);
        const wt = tag & 7;
        const fn = tag >>> 3;
        if (wt === 4) {
          if (fn !== fieldNo) throw new Error("invalid end group tag");
          break;
        }
        skip(r, wt, fn, recursionLimit - 1);
      }
      break;
    default:
      throw new Error("cant skip wire type " + wireType);
  }
  if (r.pos > r.len) eof();
  return r.buf.subarray(start, r.pos);
}

/** Keeps a field the message does not declare, as fromBinary keeps it in `$unknown`. */
export function readUnknown(r: Reader, tag: number, kept: UnknownField[] | undefined, recursionLimit: number): UnknownField[] {
  const no = tag >>> 3;
  const wireType = tag & 7;
  const data = skip(r, wireType, no, recursionLimit);
  const fields = kept ?? [];
  fields.push({ no, wireType, data });
  return fields;
}

export function zigzag32(value: number): number {
  return (value >>> 1) ^ -(value & 1);
}

/** A 64-bit map key (a string locally) as the bigint toBinary writes. */
export function bigintKey(key: string): bigint {
  try {
    return BigInt(key);
  } catch {
    throw UNSUPPORTED;
  }
}

/** Sets a map entry; `__proto__` is a key like any other. */
export function setEntry(record: Record<string, unknown>, key: unknown, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
  else record[key as string] = value;
}
