// The compiled codecs (src/codec) against reflection, by property: seeded
// random messages of every event type the registry declares, of every message
// type of the contracts, and of a test-only type holding every scalar type,
// packed and unpacked lists, maps of every key type, oneofs, proto3 optional
// and recursion (the contracts have no unsigned, zigzag, fixed-width or float
// fields). Encoding must equal toBinary byte for byte; decoding must equal
// fromBinary, for valid bytes and for truncated and garbled ones, where both
// must fail alike (throw) or read the same message.

import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { create, createFileRegistry, fromBinary, toBinary, type DescField, type DescMessage } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  timestampFromMs,
  type FieldDescriptorProto,
} from "@bufbuild/protobuf/wkt";
import { newId } from "@emailsvc/ids";
import * as proto from "@emailsvc/proto";
import { TOPICS, decodeEvent, encodeEvent, eventTenant, type Topic } from "../src/index.js";
import { messageCodec } from "../src/codec/index.js";

/** A seeded generator (mulberry32): a failure names its seed and is reproduced by it. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Random = ReturnType<typeof random>;

const STRINGS = ["", "a", "live", "sent", "eml_01JD4Q7W8X9Y0Z1A2B3C4D5E6F", "Zürich", "日本語のテキスト", "emoji 😀 pair", "lone \ud800 surrogate", "\udc00", "\ufeffbom", "x".repeat(127), "y".repeat(128), "é".repeat(70)];
/** Past 16 KiB a length takes three bytes: the encoder moves what it wrote of a nested message. */
const LONG = "z".repeat(17_000);
const INT32 = [0, 1, -1, 127, 128, 300, 16_383, 16_384, 2_147_483_647, -2_147_483_648];
const UINT32 = [0, 1, 127, 128, 2_147_483_648, 4_294_967_295];
const INT64 = [0n, 1n, -1n, 127n, 128n, 1_795_773_416n, 2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n)];
const UINT64 = [0n, 1n, 128n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n];
const DOUBLES = [0, -0, 1.5, -2.25, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.MAX_VALUE, Number.MIN_VALUE];
const FLOATS = [0, -0, 1.5, -2.25, Number.NaN, Number.POSITIVE_INFINITY, 3.4028234663852886e38, 1e-40];

function scalarValue(field: DescField, scalar: number, rnd: Random): unknown {
  switch (scalar) {
    case 9:
      return rnd.chance(0.01) ? LONG : rnd.pick(STRINGS);
    case 8:
      return rnd.chance(0.5);
    case 12:
      return Uint8Array.from({ length: rnd.pick([0, 1, 5, 130]) }, () => rnd.int(256));
    case 5:
    case 17:
    case 15:
      return rnd.chance(0.6) ? rnd.pick(INT32) : rnd.int(2 ** 32) - 2 ** 31;
    case 13:
    case 7:
      return rnd.chance(0.6) ? rnd.pick(UINT32) : rnd.int(2 ** 32);
    case 3:
    case 18:
    case 16:
      return rnd.chance(0.7) ? rnd.pick(INT64) : BigInt.asIntN(64, (BigInt(rnd.int(2 ** 32)) << 32n) | BigInt(rnd.int(2 ** 32)));
    case 4:
    case 6:
      return rnd.chance(0.7) ? rnd.pick(UINT64) : (BigInt(rnd.int(2 ** 32)) << 32n) | BigInt(rnd.int(2 ** 32));
    case 1:
      return rnd.chance(0.6) ? rnd.pick(DOUBLES) : (rnd.next() - 0.5) * 1e6;
    case 2:
      return rnd.chance(0.6) ? rnd.pick(FLOATS) : Math.fround((rnd.next() - 0.5) * 1e6);
    default:
      throw new Error(`scalar ${scalar} of ${field.name}`);
  }
}

function enumValue(field: DescField & { enum: NonNullable<DescField["enum"]> }, rnd: Random): number {
  // Open enums keep numbers they do not declare.
  return rnd.chance(0.85) ? rnd.pick(field.enum.values).number : rnd.pick([99, -1, 2_147_483_647]);
}

function mapKey(scalar: number, rnd: Random): string {
  switch (scalar) {
    case 9:
      return rnd.pick(["", "k", "Zürich", "__proto__", "12", "x".repeat(200)]);
    case 8:
      return String(rnd.chance(0.5));
    case 3:
    case 18:
    case 16:
    case 4:
    case 6:
      return String(scalarValue(undefined as never, scalar, rnd));
    default:
      return String(scalarValue(undefined as never, scalar, rnd));
  }
}

/** An init value of a random message of `desc` (create() makes the message). */
function randomInit(desc: DescMessage, rnd: Random, depth: number): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  const fill = (field: DescField): unknown => {
    switch (field.fieldKind) {
      case "scalar":
        return scalarValue(field, field.scalar, rnd);
      case "enum":
        return enumValue(field, rnd);
      case "message":
        return randomInit(field.message, rnd, depth + 1);
      default:
        throw new Error("not singular");
    }
  };
  for (const member of desc.members) {
    if (!rnd.chance(depth === 0 ? 0.75 : 0.25)) continue;
    if (member.kind === "oneof") {
      const field = rnd.pick(member.fields);
      if (field.fieldKind === "message" && depth > 1) continue;
      init[member.localName] = { case: field.localName, value: fill(field) };
      continue;
    }
    const field = member;
    switch (field.fieldKind) {
      case "message":
        if (depth <= 1) init[field.localName] = randomInit(field.message, rnd, depth + 1);
        break;
      case "list": {
        if (field.listKind === "message" && depth > 1) break;
        init[field.localName] = Array.from({ length: rnd.int(4) }, () =>
          field.listKind === "message" ? randomInit(field.message, rnd, depth + 1) : field.listKind === "enum" ? enumValue(field, rnd) : scalarValue(field, field.scalar, rnd),
        );
        break;
      }
      case "map": {
        if (field.mapKind === "message" && depth > 1) break;
        const record: Record<string, unknown> = {};
        for (let i = rnd.int(4); i > 0; i--) {
          const value = field.mapKind === "message" ? randomInit(field.message, rnd, depth + 1) : field.mapKind === "enum" ? enumValue(field, rnd) : scalarValue(field, field.scalar, rnd);
          Object.defineProperty(record, mapKey(field.mapKey, rnd), { value, enumerable: true, writable: true, configurable: true });
        }
        init[field.localName] = record;
        break;
      }
      default:
        init[field.localName] = fill(field);
    }
  }
  return init;
}

function randomMessage(desc: DescMessage, rnd: Random) {
  const message = create(desc, randomInit(desc, rnd, 0));
  if (rnd.chance(0.2)) {
    // Fields of a later version of the contract, as fromBinary keeps them.
    const no = 1000 + rnd.int(1000);
    (message as { $unknown?: unknown }).$unknown = [
      rnd.pick([
        { no, wireType: 0, data: Uint8Array.of(0x96, 0x01) },
        { no, wireType: 2, data: Uint8Array.of(3, 0x61, 0x62, 0x63) },
        { no, wireType: 5, data: Uint8Array.of(1, 2, 3, 4) },
        { no, wireType: 1, data: Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8) },
      ]),
    ];
  }
  return message;
}

/** What decoding does: the message, or that it threw. */
function outcome(decode: () => unknown): { message: unknown } | { threw: true } {
  try {
    return { message: decode() };
  } catch (err) {
    // TextDecoder's TypeError comes from Node's realm, not Jest's: no instanceof.
    if (Object.prototype.toString.call(err) !== "[object Error]") throw new Error(`threw a non-error: ${String(err)}`);
    return { threw: true };
  }
}

/** Valid bytes cut short, flipped, spliced and made up. */
function garbled(valid: Uint8Array, rnd: Random): Uint8Array[] {
  const cases: Uint8Array[] = [];
  for (let cut = 0; cut < valid.length; cut += Math.max(1, Math.floor(valid.length / 40))) cases.push(valid.slice(0, cut));
  for (let i = 0; i < 20 && valid.length > 0; i++) {
    const flipped = valid.slice();
    flipped[rnd.int(flipped.length)] = rnd.int(256);
    cases.push(flipped);
    const at = rnd.int(valid.length);
    const inserted = Uint8Array.from({ length: 1 + rnd.int(4) }, () => rnd.int(256));
    const spliced = new Uint8Array(valid.length + inserted.length);
    spliced.set(valid.subarray(0, at));
    spliced.set(inserted, at);
    spliced.set(valid.subarray(at), at + inserted.length);
    cases.push(spliced);
  }
  for (let i = 0; i < 20; i++) cases.push(Uint8Array.from({ length: rnd.int(40) }, () => rnd.int(256)));
  // A read of the bytes in the middle of a larger buffer (as the durable bus hands them over).
  const framed = new Uint8Array(valid.length + 8);
  framed.set(valid, 4);
  cases.push(framed.subarray(4, 4 + valid.length));
  return cases;
}

function checkType(desc: DescMessage, seed: number, messages: number): void {
  const codec = messageCodec(desc);
  const rnd = random(seed);
  const hex = (bytes: Uint8Array) => Buffer.from(bytes.subarray(0, 64)).toString("hex") + (bytes.length > 64 ? `… (${bytes.length} bytes)` : "");
  for (let i = 0; i < messages; i++) {
    const message = randomMessage(desc, rnd);
    const where = `${desc.typeName}, seed ${seed}, message ${i}`;
    const expected = toBinary(desc, message);
    const encoded = codec.encode(message);
    if (Buffer.compare(Buffer.from(encoded), Buffer.from(expected)) !== 0) throw new Error(`${where}: encoded ${hex(encoded)}, toBinary ${hex(expected)}`);
    // Bytes of their own: a view of a larger buffer would carry it along (structured clone to a worker, retention).
    if (!(encoded instanceof Uint8Array) || encoded.byteLength !== encoded.buffer.byteLength) throw new Error(`${where}: not a Uint8Array of its own`);
    if (!isDeepStrictEqual(codec.decode(expected), fromBinary(desc, expected))) throw new Error(`${where}: decoded differently`);
    for (const bytes of garbled(expected, rnd)) {
      const ours = outcome(() => codec.decode(bytes));
      const theirs = outcome(() => fromBinary(desc, bytes));
      if (!isDeepStrictEqual(ours, theirs)) {
        throw new Error(`${where}, input ${hex(bytes)}: ${"threw" in ours ? "threw" : "read a message"} where fromBinary ${"threw" in theirs ? "threw" : "read one" + ("threw" in ours ? "" : " (another)")}`);
      }
    }
  }
}

/** Every message type the contracts export (one level of namespaces deep). */
function contractTypes(): DescMessage[] {
  const found = new Map<string, DescMessage>();
  const visit = (value: unknown, depth: number) => {
    if (value === null || typeof value !== "object") return;
    if ((value as { kind?: unknown }).kind === "message") {
      const desc = value as DescMessage;
      found.set(desc.typeName, desc);
      return;
    }
    if (depth < 1) for (const inner of Object.values(value)) visit(inner, depth + 1);
  };
  for (const value of Object.values(proto)) visit(value, 0);
  return [...found.values()];
}

/** A proto3 type of this test only, with what the contracts lack (built from a descriptor, no generated code). */
function allTypes(syntax: "proto3" | "proto2"): DescMessage {
  const scalars: Array<[string, Type]> = [
    ["double", Type.DOUBLE],
    ["float", Type.FLOAT],
    ["int64", Type.INT64],
    ["uint64", Type.UINT64],
    ["int32", Type.INT32],
    ["fixed64", Type.FIXED64],
    ["fixed32", Type.FIXED32],
    ["bool", Type.BOOL],
    ["string", Type.STRING],
    ["bytes", Type.BYTES],
    ["uint32", Type.UINT32],
    ["sfixed32", Type.SFIXED32],
    ["sfixed64", Type.SFIXED64],
    ["sint32", Type.SINT32],
    ["sint64", Type.SINT64],
  ];
  const field = (name: string, number: number, type: Type, more: Partial<FieldDescriptorProto> = {}) =>
    ({ name, number, type, label: Label.OPTIONAL, jsonName: name, ...more }) as FieldDescriptorProto;
  const fields: FieldDescriptorProto[] = [];
  const oneofs = [{ name: "choice" }];
  const nested: Array<{ name: string; field: FieldDescriptorProto[]; options: { mapEntry: boolean } }> = [];
  let n = 1;
  // Declared out of number order: toBinary writes by number.
  fields.push(field("child", 400, Type.MESSAGE, { typeName: ".codec.test.AllTypes" }));
  fields.push(field("children", 401, Type.MESSAGE, { typeName: ".codec.test.AllTypes", label: Label.REPEATED }));
  fields.push(field("colour", 402, Type.ENUM, { typeName: ".codec.test.Colour" }));
  fields.push(field("colours", 403, Type.ENUM, { typeName: ".codec.test.Colour", label: Label.REPEATED }));
  for (const [name, type] of scalars) {
    fields.push(field(`s_${name}`, n++, type));
    fields.push(field(`r_${name}`, n++, type, { label: Label.REPEATED }));
    if (type !== Type.STRING && type !== Type.BYTES) fields.push(field(`u_${name}`, n++, type, { label: Label.REPEATED, options: { packed: false } as never }));
    if (syntax === "proto3") {
      oneofs.push({ name: `_o_${name}` });
      fields.push(field(`o_${name}`, n++, type, { oneofIndex: oneofs.length - 1, proto3Optional: true }));
    }
  }
  fields.push(field("c_text", 300, Type.STRING, { oneofIndex: 0 }));
  fields.push(field("c_child", 301, Type.MESSAGE, { typeName: ".codec.test.AllTypes", oneofIndex: 0 }));
  fields.push(field("c_int64", 302, Type.INT64, { oneofIndex: 0 }));
  fields.push(field("c_bytes", 303, Type.BYTES, { oneofIndex: 0 }));
  const mapKeys = scalars.filter(([, type]) => ![Type.DOUBLE, Type.FLOAT, Type.BYTES].includes(type));
  const mapValues: Array<[string, Type, string?]> = [["string", Type.STRING], ["int64", Type.INT64], ["double", Type.DOUBLE], ["bytes", Type.BYTES], ["colour", Type.ENUM, ".codec.test.Colour"], ["child", Type.MESSAGE, ".codec.test.AllTypes"]];
  let m = 500;
  for (const [keyName, keyType] of mapKeys) {
    const [valueName, valueType, valueTypeName] = mapValues[m % mapValues.length]!;
    const entry = `M${keyName}${valueName}Entry`;
    nested.push({ name: entry, field: [field("key", 1, keyType), field("value", 2, valueType, valueTypeName ? { typeName: valueTypeName } : {})], options: { mapEntry: true } });
    fields.push(field(`m_${keyName}_${valueName}`, m++, Type.MESSAGE, { label: Label.REPEATED, typeName: `.codec.test.AllTypes.${entry}` }));
  }
  const file = create(FileDescriptorProtoSchema, {
    name: `codec_test_${syntax}.proto`,
    package: "codec.test",
    syntax,
    messageType: [{ name: "AllTypes", field: fields, oneofDecl: oneofs, nestedType: nested }],
    enumType: [{ name: "Colour", value: [{ name: "COLOUR_UNSPECIFIED", number: 0 }, { name: "COLOUR_RED", number: 1 }, { name: "COLOUR_GREEN", number: 2 }] }],
  });
  return createFileRegistry(file, () => undefined).getMessage("codec.test.AllTypes")!;
}

describe("compiled codecs", () => {
  it.each(Object.keys(TOPICS) as Topic[])("the %s event: compiled, encodes as toBinary and decodes as fromBinary, garbage included", (topic) => {
    const schema = TOPICS[topic].schema;
    expect(messageCodec(schema).reflection).toBeUndefined();
    checkType(schema, 20_261_127 + topic.length, 100);
  });

  it("every message type of the contracts: the same (compiled but for those holding wrappers or Struct)", () => {
    const types = contractTypes();
    expect(types.length).toBeGreaterThan(100);
    const reflected = types.filter((desc) => messageCodec(desc).reflection !== undefined);
    for (const desc of reflected) expect(messageCodec(desc).reflection).toMatch(/is a wrapper|is a google.protobuf.Struct/);
    expect(reflected.length).toBeLessThan(types.length / 3);
    types.forEach((desc, i) => checkType(desc, 7_000 + i, 6));
  });

  it("a type with every scalar type, packed and unpacked lists, maps of every key type, oneofs, optional and recursion: the same", () => {
    const desc = allTypes("proto3");
    expect(messageCodec(desc).reflection).toBeUndefined();
    checkType(desc, 42, 60);
  });

  it("leaves a proto2 type to reflection, which then encodes and decodes it", () => {
    const desc = allTypes("proto2");
    const codec = messageCodec(desc);
    expect(codec.reflection).toBe("codec.test.AllTypes is not proto3");
    const rnd = random(5);
    for (let i = 0; i < 20; i++) {
      const message = randomMessage(desc, rnd);
      expect(codec.encode(message)).toEqual(toBinary(desc, message));
    }
  });

  it("keeps reflection in a runtime that refuses code generation", () => {
    // The built package, in a Node started as a locked-down deployment might start it.
    const script = [
      `const { messageCodec } = require(${JSON.stringify(path.join(__dirname, "..", "dist", "index.js"))});`,
      `const { events } = require("@emailsvc/proto");`,
      `const { create, toBinary } = require("@bufbuild/protobuf");`,
      `const codec = messageCodec(events.EmailStatusChangedSchema);`,
      `const message = create(events.EmailStatusChangedSchema, { emailId: "eml_1", status: "sent" });`,
      `const same = Buffer.from(codec.encode(message)).equals(Buffer.from(toBinary(events.EmailStatusChangedSchema, message)));`,
      `console.log(JSON.stringify({ reflection: codec.reflection, same, status: codec.decode(codec.encode(message)).status }));`,
    ].join("\n");
    const out = execFileSync(process.execPath, ["--disallow-code-generation-from-strings", "-e", script], { cwd: path.join(__dirname, ".."), encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ reflection: "code generation refused (EvalError)", same: true, status: "sent" });
  });

  it("encodes a value of the wrong kind through toBinary, which converts or rejects it", () => {
    const codec = messageCodec(proto.events.EmailSendRequestedSchema);
    const odd = create(proto.events.EmailSendRequestedSchema, { emailId: "eml_1" });
    (odd as unknown as { templateVersion: unknown }).templateVersion = "7";
    expect(codec.encode(odd)).toEqual(toBinary(proto.events.EmailSendRequestedSchema, odd));
    (odd as unknown as { templateVersion: unknown }).templateVersion = 1.5;
    expect(() => codec.encode(odd)).toThrow("invalid int32: 1.5");
    // A message of another type where EventMeta belongs: toBinary's ForeignFieldError.
    const foreign = create(proto.events.EmailSendRequestedSchema, { emailId: "eml_1" });
    (foreign as unknown as { meta: unknown }).meta = create(proto.events.SubscriberDeletedSchema, {});
    expect(() => codec.encode(foreign)).toThrow(/cannot use/);
    // The failed attempt leaves nothing behind for the next message.
    const next = create(proto.events.EmailSendRequestedSchema, { emailId: "eml_2" });
    expect(codec.encode(next)).toEqual(toBinary(proto.events.EmailSendRequestedSchema, next));
  });
});

describe("the registry on compiled codecs", () => {
  it("encodeEvent writes what toBinary writes, and decodeEvent reads it back", () => {
    const origin = { eventId: newId("evt"), tenant: `${newId("acc")}:live`, occurredAt: 1_795_773_416_096 };
    const body = { emailId: newId("eml"), campaignId: newId("cmp"), subscriberId: newId("sub"), templateId: newId("tpl"), templateVersion: 3 };
    const { event } = encodeEvent("email.send.requested", origin, body);
    const message = fromBinary(proto.events.EmailSendRequestedSchema, event.value);
    expect(Buffer.from(event.value)).toEqual(Buffer.from(toBinary(proto.events.EmailSendRequestedSchema, message)));
    expect(message).toMatchObject(body);
    const decoded = decodeEvent({ topic: "email.send.requested", key: event.key, value: event.value, headers: event.headers! });
    if (!decoded.ok) throw new Error(decoded.problem);
    expect(decoded.message).toStrictEqual(message);
    expect(decoded.meta.occurredAt).toBe(origin.occurredAt);
  });

  it("encodeEvent's meta is the one create() and timestampFromMs make, for any time", () => {
    for (const occurredAt of [0, 1, 999, 1000, -1, -1001, 1.5, 1_795_773_416_096, 253_402_300_799_999]) {
      const origin = { eventId: newId("evt"), tenant: `${newId("acc")}:test`, occurredAt };
      const body = { emailId: newId("eml"), status: "bounced", subscriberId: newId("sub"), campaignId: newId("cmp"), reason: "x", failureReason: 3, bounceType: "hard" };
      const expected = create(proto.events.EmailStatusChangedSchema, {
        ...body,
        meta: create(proto.events.EventMetaSchema, { eventId: origin.eventId, accountId: origin.tenant.split(":")[0], mode: "test", occurredAt: timestampFromMs(occurredAt) }),
      });
      const { event } = encodeEvent("email.status", origin, body);
      expect([occurredAt, Buffer.from(event.value).toString("hex")]).toEqual([occurredAt, Buffer.from(toBinary(proto.events.EmailStatusChangedSchema, expected)).toString("hex")]);
    }
  });

  it("eventTenant reads the tenant decoding would read, of every topic's messages, valid or garbled, and never another", () => {
    const rnd = random(2026);
    let answered = 0;
    let declined = 0;
    for (const [topic, spec] of Object.entries(TOPICS)) {
      for (let i = 0; i < 40; i++) {
        const message = randomMessage(spec.schema, rnd) as { meta?: { accountId: string; mode: string } };
        // Mostly a well-formed tenant (as producers write), else whatever the generator made.
        if (rnd.chance(0.8)) message.meta = create(proto.events.EventMetaSchema, { eventId: newId("evt"), accountId: newId("acc"), mode: rnd.pick(["live", "test"]) });
        const valid = toBinary(spec.schema, message as never);
        const tenantOf = (bytes: Uint8Array): string | undefined => {
          const meta = (fromBinary(spec.schema, bytes) as { meta?: { accountId: string; mode: string } }).meta;
          return meta && /^acc_/.test(meta.accountId) && (meta.mode === "live" || meta.mode === "test") ? `${meta.accountId}:${meta.mode}` : undefined;
        };
        const expected = tenantOf(valid);
        const read = eventTenant(valid);
        // A message with fields of a later version (numbers past 15) is left to decoding: that is allowed.
        if (read !== undefined || (message as { $unknown?: unknown }).$unknown === undefined) expect([topic, read]).toEqual([topic, expected]);
        for (const bytes of [valid, ...garbled(valid, rnd)]) {
          const peeked = eventTenant(bytes);
          if (peeked === undefined) {
            declined++;
            continue;
          }
          answered++;
          // Bytes spoilt after the meta (a bad UTF-8 string further on) may still fail to decode: eventTenant
          // reads only what it needs. Where decoding reads a message, it names the same tenant.
          const decoded = outcome(() => tenantOf(bytes));
          if ("message" in decoded) expect([topic, Buffer.from(bytes).toString("hex"), decoded.message]).toEqual([topic, Buffer.from(bytes).toString("hex"), peeked]);
        }
      }
    }
    expect(answered).toBeGreaterThan(1000);
    expect(declined).toBeGreaterThan(1000);
  });

  it("eventTenant of what encodeEvent writes, and of bytes that are no event", () => {
    const t = `${newId("acc")}:test`;
    const { event } = encodeEvent("email.status", { eventId: newId("evt"), tenant: t, occurredAt: 1_795_773_416_096 }, { emailId: newId("eml"), status: "sent", campaignId: newId("cmp") });
    expect(eventTenant(event.value)).toBe(t);
    // Runs of one tenant, another between, the first again, the same account in the other mode.
    const statusOf = (tenant: string) => encodeEvent("email.status", { eventId: newId("evt"), tenant, occurredAt: 1 }, { emailId: newId("eml"), status: "sent" }).event.value;
    const u = `${newId("acc")}:live`;
    const sameAccountLive = `${t.split(":")[0]}:live`;
    for (const tenant of [t, t, u, t, sameAccountLive, t, u]) expect(eventTenant(statusOf(tenant))).toBe(tenant);
    expect(eventTenant(new Uint8Array(0))).toBeUndefined();
    expect(eventTenant(Uint8Array.from([0xff, 0xff]))).toBeUndefined();
    const noMode = toBinary(proto.events.EmailStatusChangedSchema, create(proto.events.EmailStatusChangedSchema, { meta: { eventId: "evt_1", accountId: newId("acc") } }));
    expect(eventTenant(noMode)).toBeUndefined();
    const badAccount = toBinary(proto.events.EmailStatusChangedSchema, create(proto.events.EmailStatusChangedSchema, { meta: { eventId: "evt_1", accountId: "acc_short", mode: "live" } }));
    expect(eventTenant(badAccount)).toBeUndefined();
  });
});
