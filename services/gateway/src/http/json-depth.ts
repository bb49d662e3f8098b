// How deeply a JSON text nests, found without recursion and before anything
// recursive (JSON.parse's consumers: the __proto__ check, ajv, protobuf's
// Struct conversion, the services' decoders) sees the body.

/**
 * Deepest nesting of arrays and objects a body may have; the body itself is
 * level 1, so `metadata` and `variables` may nest 31 levels. Measured: the
 * services decode a google.protobuf.Struct field with protobuf-es's default
 * recursion limit of 100 messages, which takes 49 levels of JSON containers
 * in a request field and 48 in a response (one more enclosing message); 50
 * was a 500. 32 stays well inside both, and far beyond what metadata (flat)
 * or template variables need.
 */
export const JSON_MAX_DEPTH = 32;

/**
 * True when `text` nests arrays and objects deeper than `limit`. A linear
 * scan that skips string contents (with their escapes); it does not check
 * that the text is JSON, JSON.parse does that after it.
 */
export function exceedsJsonDepth(text: string, limit: number = JSON_MAX_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++; // the escaped character, e.g. \" , is not the end
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}
