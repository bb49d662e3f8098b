// Compiles a protobuf message type to an encoder and a decoder specialised
// from its descriptor once: plain JavaScript, one function per message type,
// built with `new Function` from the descriptor the generated code already
// carries (as protobufjs does). toBinary and fromBinary walk per-field
// closures and grow a fresh buffer for every message; a compiled encoder
// writes straight-line code into one scratch buffer kept between messages, and
// a compiled decoder switches on the tag and builds the message as one object
// literal. Why code generation at run time rather than a buf plugin: the codec
// comes from the very descriptor reflection uses, so the two cannot drift, and
// there is no second generated tree to keep fresh.
//
// The generated source holds only numbers, and names and strings from the
// descriptor written with JSON.stringify; everything else (the wire helpers,
// the other types' functions) comes in as arguments.
//
// What it compiles: messages of proto3 files, with every scalar type (64-bit
// ones as bigint), enums, nested messages (Timestamp among them), repeated
// fields (packed and not), maps, oneofs and proto3 `optional`. What it leaves
// to reflection (compileCodec says why, and index.ts falls back): proto2 and
// editions files (default values and presence on the prototype chain, closed
// enums, groups, required fields), 64-bit fields read as strings
// (`jstype = JS_STRING`), and fields of the types protobuf-es represents
// otherwise than as messages (the wrappers of google/protobuf/wrappers.proto,
// google.protobuf.Struct).

import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import * as wire from "./wire.js";

const EDITION_PROTO3 = 999;
const WRAPPERS = new Set(
  ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"].map((name) => `google.protobuf.${name}Value`),
);

export interface Compiled {
  /** The message's bytes, as toBinary writes them; throws wire.UNSUPPORTED for a value it does not take as is. */
  encode(message: unknown): Uint8Array;
  /** The message, as fromBinary reads it (throwing where it throws). */
  decode(bytes: Uint8Array): unknown;
}

/** The compiled codec of a message type, or why it stays on reflection. */
export function compileCodec(root: DescMessage): { codec: Compiled } | { unsupported: string } {
  const types = reachableTypes(root);
  for (const desc of types) {
    const why = unsupported(desc);
    if (why !== undefined) return { unsupported: why };
  }
  const index = new Map(types.map((desc, i) => [desc, i]));
  const source = [
    ...types.flatMap((desc, i) => [zeroFunction(desc, i), encodeFunction(desc, i, index), decodeFunction(desc, i, index)]),
    `return {`,
    `  encode(m) { W.pos = 0; e0(W, m); return wire.finish(W); },`,
    `  decode(bytes) { const r = wire.reader(bytes); const m = z0(); d0(r, bytes.length, m, 0); return m; },`,
    `};`,
  ].join("\n");
  try {
    const codec = new Function("wire", "W", "U", "hasOwn", source)(wire, wire.writer, wire.UNSUPPORTED, Object.prototype.hasOwnProperty) as Compiled;
    return { codec };
  } catch (err) {
    // A runtime that forbids code generation (--disallow-code-generation-from-strings).
    return { unsupported: `code generation refused (${err instanceof Error ? err.name : "error"})` };
  }
}

/** The message types a codec of `root` needs, `root` first. */
function reachableTypes(root: DescMessage): DescMessage[] {
  const seen = new Set<DescMessage>([root]);
  const queue = [root];
  for (let i = 0; i < queue.length; i++) {
    for (const field of queue[i]!.fields) {
      const child = field.message;
      if (child !== undefined && !seen.has(child)) {
        seen.add(child);
        queue.push(child);
      }
    }
  }
  return queue;
}

function unsupported(desc: DescMessage): string | undefined {
  if (desc.file.edition !== EDITION_PROTO3) return `${desc.typeName} is not proto3`;
  for (const field of desc.fields) {
    if ("delimitedEncoding" in field && field.delimitedEncoding) return `${desc.typeName}.${field.name} is group-encoded`;
    if (field.presence === 3) return `${desc.typeName}.${field.name} is required`;
    if ("longAsString" in field && field.longAsString) return `${desc.typeName}.${field.name} is a 64-bit field read as a string`;
    if (field.enum !== undefined && !field.enum.open) return `${desc.typeName}.${field.name} is a closed enum`;
    const child = field.message;
    if (child !== undefined) {
      if (child.typeName === "google.protobuf.Struct" && desc.typeName !== "google.protobuf.Value") return `${desc.typeName}.${field.name} is a google.protobuf.Struct (a JSON object locally)`;
      if (field.fieldKind === "message" && !field.oneof && WRAPPERS.has(child.typeName)) return `${desc.typeName}.${field.name} is a wrapper (its scalar locally)`;
    }
  }
  return undefined;
}

const q = (text: string) => JSON.stringify(text);
const prop = (object: string, name: string) => `${object}[${q(name)}]`;

// Encoding.

const VARINT = 0;
const BIT64 = 1;
const LEN = 2;
const BIT32 = 5;

function wireTypeOf(scalar: ScalarType): number {
  switch (scalar) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return LEN;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return BIT64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return BIT32;
    default:
      return VARINT;
  }
}

/** Statements writing a tag. */
function writeTag(fieldNo: number, wireType: number): string {
  const tag = ((fieldNo << 3) | wireType) >>> 0;
  return tag < 0x80 ? `wire.byte(W, ${tag});` : `wire.uint32(W, ${tag});`;
}

/** Statements checking `v` holds a value of the scalar type, then writing it (no tag). */
function writeScalar(scalar: ScalarType, v: string): string {
  switch (scalar) {
    case ScalarType.STRING:
      return `if (typeof ${v} !== "string") throw U; wire.string(W, ${v});`;
    case ScalarType.BOOL:
      return `if (typeof ${v} !== "boolean") throw U; wire.byte(W, ${v} ? 1 : 0);`;
    case ScalarType.INT32:
      return `if (typeof ${v} !== "number" || (${v} | 0) !== ${v}) throw U; wire.int32(W, ${v});`;
    case ScalarType.SINT32:
      return `if (typeof ${v} !== "number" || (${v} | 0) !== ${v}) throw U; wire.sint32(W, ${v});`;
    case ScalarType.SFIXED32:
      return `if (typeof ${v} !== "number" || (${v} | 0) !== ${v}) throw U; wire.fixed32(W, ${v});`;
    case ScalarType.UINT32:
      return `if (typeof ${v} !== "number" || (${v} >>> 0) !== ${v}) throw U; wire.uint32(W, ${v});`;
    case ScalarType.FIXED32:
      return `if (typeof ${v} !== "number" || (${v} >>> 0) !== ${v}) throw U; wire.fixed32(W, ${v});`;
    case ScalarType.INT64:
      return `wire.int64(W, ${v}, true);`;
    case ScalarType.UINT64:
      return `wire.int64(W, ${v}, false);`;
    case ScalarType.SINT64:
      return `wire.sint64(W, ${v});`;
    case ScalarType.FIXED64:
      return `wire.fixed64(W, ${v}, false);`;
    case ScalarType.SFIXED64:
      return `wire.fixed64(W, ${v}, true);`;
    case ScalarType.FLOAT:
      return `if (typeof ${v} !== "number") throw U; wire.float(W, ${v});`;
    case ScalarType.DOUBLE:
      return `if (typeof ${v} !== "number") throw U; wire.double(W, ${v});`;
    case ScalarType.BYTES:
      return `if (!(${v} instanceof Uint8Array)) throw U; wire.bytes(W, ${v});`;
  }
}

/** The condition under which toBinary writes a field of implicit presence: its value is not the zero value. */
function notZero(field: DescField, v: string): string {
  if (field.fieldKind === "enum") return `${v} !== ${field.enum.values[0]!.number}`;
  if (field.fieldKind !== "scalar") throw new Error("not a scalar");
  switch (field.scalar) {
    case ScalarType.STRING:
      return `${v} !== ""`;
    case ScalarType.BOOL:
      return `${v} !== false`;
    case ScalarType.BYTES:
      return `(!(${v} instanceof Uint8Array) || ${v}.byteLength > 0)`;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // -0 is written: Object.is(v, 0).
      return `(${v} !== 0 || 1 / ${v} < 0)`;
    default:
      // Loose, as toBinary: 0n, 0 and "0" are all zero.
      return `${v} != 0`;
  }
}

/** Statements writing a message value `v` of type `child` with the field's tag. */
function writeMessage(fieldNo: number, child: DescMessage, v: string, index: Map<DescMessage, number>): string {
  return `if (${v} === null || typeof ${v} !== "object") throw U; ${writeTag(fieldNo, LEN)} { const at = wire.fork(W); e${index.get(child)}(W, ${v}); wire.join(W, at); }`;
}

/** Statements writing the value `v` of a singular field (its tag first). */
function writeSingular(field: DescField, v: string, index: Map<DescMessage, number>): string {
  if (field.fieldKind === "message") return writeMessage(field.number, field.message, v, index);
  const scalar = field.fieldKind === "enum" ? ScalarType.INT32 : field.fieldKind === "scalar" ? field.scalar : undefined;
  if (scalar === undefined) throw new Error("not singular");
  return `${writeTag(field.number, wireTypeOf(scalar))} ${writeScalar(scalar, v)}`;
}

/** A map key (always a string locally) as the value toBinary writes for the key's type. */
function mapKey(scalar: ScalarType, k: string): string {
  switch (scalar) {
    case ScalarType.STRING:
      return k;
    case ScalarType.BOOL:
      return `(${k} === "true" ? true : ${k} === "false" ? false : ${k})`;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return `wire.bigintKey(${k})`;
    default:
      return `Number.parseInt(${k})`;
  }
}

function encodeField(field: DescField, index: Map<DescMessage, number>): string {
  const name = field.localName;
  if (field.fieldKind === "list") {
    const lines = [`v = ${prop("m", name)}; if (!Array.isArray(v)) throw U;`];
    if (field.listKind === "message") {
      lines.push(`for (let i = 0; i < v.length; i++) { const x = v[i]; ${writeMessage(field.number, field.message, "x", index)} }`);
    } else {
      const scalar = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
      if (field.packed) {
        lines.push(`if (v.length > 0) { ${writeTag(field.number, LEN)} const at = wire.fork(W); for (let i = 0; i < v.length; i++) { const x = v[i]; ${writeScalar(scalar, "x")} } wire.join(W, at); }`);
      } else {
        lines.push(`for (let i = 0; i < v.length; i++) { const x = v[i]; ${writeTag(field.number, wireTypeOf(scalar))} ${writeScalar(scalar, "x")} }`);
      }
    }
    return lines.join("\n    ");
  }
  if (field.fieldKind === "map") {
    const value =
      field.mapKind === "message"
        ? writeMessage(2, field.message, "x", index)
        : (() => {
            const scalar = field.mapKind === "enum" ? ScalarType.INT32 : field.scalar;
            return `${writeTag(2, wireTypeOf(scalar))} ${writeScalar(scalar, "x")}`;
          })();
    return [
      `v = ${prop("m", name)}; if (v === null || typeof v !== "object") throw U;`,
      `{ const keys = Object.keys(v); for (let i = 0; i < keys.length; i++) { const k = keys[i]; const x = v[k];`,
      `  ${writeTag(field.number, LEN)} const at = wire.fork(W);`,
      `  { const key = ${mapKey(field.mapKey, "k")}; ${writeTag(1, wireTypeOf(field.mapKey))} ${writeScalar(field.mapKey, "key")} }`,
      `  ${value}`,
      `  wire.join(W, at); } }`,
    ].join("\n    ");
  }
  if (field.oneof) {
    return `v = ${prop("m", field.oneof.localName)}; if (v === null || typeof v !== "object") throw U; if (v.case === ${q(name)}) { v = v.value; ${writeSingular(field, "v", index)} }`;
  }
  if (field.presence !== 2) {
    // Explicit presence (message fields, proto3 optional): written when set.
    return `v = ${prop("m", name)}; if (v !== undefined && hasOwn.call(m, ${q(name)})) { ${writeSingular(field, "v", index)} }`;
  }
  return `v = ${prop("m", name)}; if (${notZero(field, "v")}) { ${writeSingular(field, "v", index)} }`;
}

function encodeFunction(desc: DescMessage, i: number, index: Map<DescMessage, number>): string {
  const fields = desc.fields.concat().sort((a, b) => a.number - b.number);
  return [
    `function e${i}(W, m) {`,
    // A message of another type: toBinary's ForeignFieldError, through the fallback.
    fields.length > 0 ? `  if (m.$typeName !== ${q(desc.typeName)}) throw U;` : ``,
    `  let v;`,
    ...fields.map((field) => `  ${encodeField(field, index)}`),
    `  v = m.$unknown; if (v !== undefined) wire.unknownFields(W, v);`,
    `}`,
  ].join("\n");
}

// Decoding.

/** An expression: the zero value of a scalar or enum field, as create() sets it. */
function zeroValue(field: DescField): string {
  if (field.fieldKind === "enum") return String(field.enum.values[0]!.number);
  if (field.fieldKind !== "scalar") throw new Error("not a scalar");
  return scalarZero(field.scalar);
}

function scalarZero(scalar: ScalarType): string {
  switch (scalar) {
    case ScalarType.STRING:
      return `""`;
    case ScalarType.BOOL:
      return `false`;
    case ScalarType.BYTES:
      return `new Uint8Array(0)`;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return `0n`;
    default:
      return `0`;
  }
}

/** The zero message, its properties in the order create() gives them (message fields and optional scalars absent). */
function zeroFunction(desc: DescMessage, i: number): string {
  const properties = [`$typeName: ${q(desc.typeName)}`];
  for (const member of desc.members) {
    const name = q(member.localName);
    if (member.kind === "oneof") properties.push(`${name}: { case: undefined }`);
    else if (member.fieldKind === "list") properties.push(`${name}: []`);
    else if (member.fieldKind === "map") properties.push(`${name}: {}`);
    else if (member.fieldKind !== "message" && member.presence === 2) properties.push(`${name}: ${zeroValue(member)}`);
  }
  return `function z${i}() { return { ${properties.join(", ")} }; }`;
}

/** An expression reading one scalar value. */
function readScalar(scalar: ScalarType, strict: boolean): string {
  switch (scalar) {
    case ScalarType.STRING:
      return `wire.readString(r, ${strict})`;
    case ScalarType.BOOL:
      return `wire.readBool(r)`;
    case ScalarType.INT32:
      return `(wire.readUint32(r) | 0)`;
    case ScalarType.UINT32:
      return `wire.readUint32(r)`;
    case ScalarType.SINT32:
      return `wire.zigzag32(wire.readUint32(r))`;
    case ScalarType.FIXED32:
      return `wire.readFixed32(r)`;
    case ScalarType.SFIXED32:
      return `wire.readSfixed32(r)`;
    case ScalarType.INT64:
      return `wire.readInt64(r)`;
    case ScalarType.UINT64:
      return `wire.readUint64(r)`;
    case ScalarType.SINT64:
      return `wire.readSint64(r)`;
    case ScalarType.FIXED64:
      return `wire.readFixed64(r, false)`;
    case ScalarType.SFIXED64:
      return `wire.readFixed64(r, true)`;
    case ScalarType.FLOAT:
      return `wire.readFloat(r)`;
    case ScalarType.DOUBLE:
      return `wire.readDouble(r)`;
    case ScalarType.BYTES:
      return `wire.readBytes(r)`;
  }
}

/** An expression reading a length-delimited message into `into` (an expression of a message of that type). */
function readMessage(child: DescMessage, into: string, index: Map<DescMessage, number>): string {
  const j = index.get(child)!;
  return `d${j}(r, wire.readUint32(r), ${into}, depth)`;
}

function decodeField(field: DescField, index: Map<DescMessage, number>): string {
  const name = field.localName;
  const target = prop("m", name);
  switch (field.fieldKind) {
    case "scalar":
    case "enum": {
      const value = field.fieldKind === "enum" ? `(wire.readUint32(r) | 0)` : readScalar(field.scalar, field.utf8Validation);
      if (field.oneof) return `${prop("m", field.oneof.localName)} = { case: ${q(name)}, value: ${value} };`;
      return `${target} = ${value};`;
    }
    case "message": {
      const j = index.get(field.message)!;
      if (field.oneof) {
        const oneof = prop("m", field.oneof.localName);
        // A second occurrence of the same case merges into the first.
        return `{ const o = ${oneof}; const c = o.case === ${q(name)} ? o.value : z${j}(); ${oneof} = { case: ${q(name)}, value: ${readMessage(field.message, "c", index)} }; }`;
      }
      return `{ const c = ${target}; ${target} = ${readMessage(field.message, `c !== undefined ? c : z${j}()`, index)}; }`;
    }
    case "list": {
      if (field.listKind === "message") return `${target}.push(${readMessage(field.message, `z${index.get(field.message)}()`, index)});`;
      const scalar = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
      const value = readScalar(scalar, field.utf8Validation);
      if (scalar === ScalarType.STRING || scalar === ScalarType.BYTES) return `${target}.push(${value});`;
      // Packed or not, whatever the field says: a reader takes both.
      return `{ const items = ${target}; if ((t & 7) === 2) { const e = wire.readUint32(r) + r.pos; while (r.pos < e) items.push(${value}); } else items.push(${value}); }`;
    }
    case "map": {
      let readValue: string;
      let valueZero: string;
      if (field.mapKind === "message") {
        const j = index.get(field.message)!;
        readValue = `val = ${readMessage(field.message, `val !== undefined ? val : z${j}()`, index)};`;
        valueZero = `z${j}()`;
      } else if (field.mapKind === "enum") {
        readValue = `val = (wire.readUint32(r) | 0);`;
        valueZero = String(field.enum.values[0]!.number);
      } else {
        readValue = `val = ${readScalar(field.scalar, field.utf8Validation)};`;
        valueZero = scalarZero(field.scalar);
      }
      return [
        `{ const record = ${target}; let key; let val; const len = wire.readUint32(r); const end = r.pos + len;`,
        `  while (r.pos < end) { const et = wire.readTag(r); switch (et >>> 3) {`,
        `    case 1: key = ${readScalar(field.mapKey, field.utf8Validation)}; break;`,
        `    case 2: ${readValue} break;`,
        `    default: wire.skip(r, et & 7, et >>> 3, 100 - depth); } }`,
        `  if (key === undefined) key = ${scalarZero(field.mapKey)};`,
        `  if (val === undefined) val = ${valueZero};`,
        `  wire.setEntry(record, key, val); }`,
      ].join("\n        ");
    }
  }
}

function decodeFunction(desc: DescMessage, i: number, index: Map<DescMessage, number>): string {
  const limitError = q(`cannot decode ${String(desc)} from binary: maximum recursion depth of 100 reached`);
  return [
    `function d${i}(r, len, m, depth) {`,
    `  if (++depth > 100) throw new Error(${limitError});`,
    `  const end = r.pos + len;`,
    `  let u = m.$unknown;`,
    `  while (r.pos < end) {`,
    `    const t = wire.readTag(r);`,
    `    switch (t >>> 3) {`,
    ...desc.fields.map((field) => `      case ${field.number}: ${decodeField(field, index)} break;`),
    `      default: u = wire.readUnknown(r, t, u, 100 - depth);`,
    `    }`,
    `  }`,
    `  if (u !== undefined && u.length > 0) m.$unknown = u;`,
    `  return m;`,
    `}`,
  ].join("\n");
}
