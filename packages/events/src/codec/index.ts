// A compiled codec per message type (compile.ts), with reflection (toBinary,
// fromBinary) kept for what the compiler leaves to it: a type it does not
// compile (see compile.ts), and a message holding a value of the wrong kind
// for its field (a number in a string field, a foreign message), which
// toBinary converts or rejects in its own way.

import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { compileCodec, type Compiled } from "./compile.js";
import { UNSUPPORTED } from "./wire.js";

export interface MessageCodec<S extends DescMessage> {
  /** Byte for byte what toBinary(schema, message) writes. */
  encode(message: MessageShape<S>): Uint8Array;
  /** What fromBinary(schema, bytes) reads; throws where it throws. */
  decode(bytes: Uint8Array): MessageShape<S>;
  /** Why the type runs on reflection; undefined when it is compiled. */
  readonly reflection: string | undefined;
}

const codecs = new WeakMap<DescMessage, MessageCodec<DescMessage>>();

/** The codec of a message type, compiled on first use. */
export function messageCodec<S extends DescMessage>(schema: S): MessageCodec<S> {
  let codec = codecs.get(schema);
  if (codec === undefined) {
    codec = build(schema);
    codecs.set(schema, codec);
  }
  return codec as unknown as MessageCodec<S>;
}

function build(schema: DescMessage): MessageCodec<DescMessage> {
  const compiled = compileCodec(schema);
  if ("unsupported" in compiled) {
    return {
      encode: (message) => toBinary(schema, message),
      decode: (bytes) => fromBinary(schema, bytes),
      reflection: compiled.unsupported,
    };
  }
  const codec: Compiled = compiled.codec;
  return {
    encode(message) {
      try {
        return codec.encode(message);
      } catch (err) {
        if (err === UNSUPPORTED) return toBinary(schema, message);
        throw err;
      }
    },
    decode: (bytes) => codec.decode(bytes) as MessageShape<DescMessage>,
    reflection: undefined,
  };
}
