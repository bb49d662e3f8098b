// The encodings of a MIME message (RFC 2045, 2047, 5322), written for speed:
// they run once per message of a campaign. Pure.

const HEX = "0123456789ABCDEF";
const CR = 13;
const LF = 10;
const SPACE = 32;
const EQUALS = 61;
/** Encoded lines end with "=" as a soft break within 76 characters (RFC 2045 6.7): 75 of content at most. */
const QP_LINE = 75;

/** The ASCII codes of the hex digits, for "=XX". */
const HEX_CODES = Array.from(HEX, (digit) => digit.charCodeAt(0));

/** Bytes `writeQuotedPrintable` may write for `text` at most: a UTF-16 unit is up to 3 UTF-8 bytes, each "=XX", plus soft breaks. */
export function quotedPrintableBound(text: string): number {
  return text.length * 10 + 3;
}

/**
 * `text` in quoted-printable over its UTF-8 bytes, with CRLF line ends
 * whatever the input had (CR, LF or CRLF). Beyond RFC 2045's rules, a space
 * after a space and every tab are encoded, so the output has no run of
 * whitespace and no whitespace at a line end: DKIM's relaxed body
 * canonicalisation leaves it as it is, and the body hash is the hash of these
 * bytes. A line starting with "." or "From " is left as it is: the SMTP
 * client dot-stuffs, and mailbox formats are the receiver's.
 *
 * Written into `out` from `start` (room for quotedPrintableBound(text)),
 * straight from the string's UTF-16 units (no UTF-8 copy of the text first);
 * returns where it ended.
 */
export function writeQuotedPrintable(text: string, out: Buffer, start: number): number {
  // Locals only (no closure over them): this loop is the writer's hot path.
  let at = start;
  let column = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    // The UTF-8 bytes to escape (up to four, packed in one number, first byte lowest), and how many.
    let bytes = 0;
    let count = 0;
    if (code < 128) {
      if (code === CR || code === LF) {
        if (code === CR && text.charCodeAt(i + 1) === LF) i++;
        out[at++] = CR;
        out[at++] = LF;
        column = 0;
        continue;
      }
      let literal = code > SPACE && code < 127 && code !== EQUALS;
      if (code === SPACE && i + 1 < length) {
        const next = text.charCodeAt(i + 1);
        literal = next !== CR && next !== LF && out[at - 1] !== SPACE;
      }
      if (literal) {
        if (column === QP_LINE) {
          out[at++] = EQUALS;
          out[at++] = CR;
          out[at++] = LF;
          column = 0;
        }
        out[at++] = code;
        column += 1;
        continue;
      }
      bytes = code;
      count = 1;
    } else if (code < 0x800) {
      bytes = (0xc0 | (code >> 6)) | ((0x80 | (code & 63)) << 8);
      count = 2;
    } else if (code >= 0xd800 && code <= 0xdbff && i + 1 < length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      const point = 0x10000 + ((code - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      bytes = ((0xf0 | (point >> 18)) | ((0x80 | ((point >> 12) & 63)) << 8) | ((0x80 | ((point >> 6) & 63)) << 16)) + (0x80 | (point & 63)) * 0x1000000;
      count = 4;
    } else {
      // A lone surrogate is U+FFFD, as Buffer.from(text, "utf8") writes it.
      const unit = code >= 0xd800 && code <= 0xdfff ? 0xfffd : code;
      bytes = (0xe0 | (unit >> 12)) | ((0x80 | ((unit >> 6) & 63)) << 8) | ((0x80 | (unit & 63)) << 16);
      count = 3;
    }
    for (let k = 0; k < count; k++) {
      const byte = k === 3 ? Math.floor(bytes / 0x1000000) & 255 : (bytes >> (k * 8)) & 255;
      if (column + 3 > QP_LINE) {
        out[at++] = EQUALS;
        out[at++] = CR;
        out[at++] = LF;
        column = 0;
      }
      out[at++] = EQUALS;
      out[at++] = HEX_CODES[byte >> 4]!;
      out[at++] = HEX_CODES[byte & 15]!;
      column += 3;
    }
  }
  return at;
}

/** Longest line RFC 5322 2.1.1 allows, without its CRLF. */
const MAX_LINE = 998;

/**
 * `text` as it is, for a part sent `7bit` (RFC 2045 2.7): only when it is
 * ASCII without NUL, every line at most 998 octets, no CR (line breaks are
 * LF) and no occurrence of `boundary`; then it needs no encoding, only its
 * line ends as CRLF. Otherwise -1 and nothing meaningful written: the caller
 * encodes the part in quoted-printable instead.
 *
 * `lines.dotted` is set when a line starts with "." (SMTP must then double it).
 *
 * Written into `out` from `start` (room for four times text.length) with native
 * copies: the text goes in whole past where it ends up, then each line is
 * moved down into place with a CRLF after it. A rendered newsletter part
 * (5.5 KB, 160 lines) takes about a third of its quoted-printable encoding.
 * Returns where it ended.
 */
export function writeSevenBit(text: string, out: Buffer, start: number, boundary: string, lines?: { dotted: boolean }): number {
  const length = text.length;
  if (text.includes("\0") || text.includes("\r") || text.includes(boundary)) return -1;
  let breaks = 0;
  let dotted = false;
  for (let from = 0; ; ) {
    const end = text.indexOf("\n", from);
    if ((end < 0 ? length : end) - from > MAX_LINE) return -1;
    if (text.charCodeAt(from) === 46) dotted = true;
    if (end < 0) break;
    breaks += 1;
    from = end + 1;
  }
  // Each LF grows by one byte (its CR): the text goes that far ahead, so every move is downwards.
  const source = start + breaks;
  // As UTF-8, one byte a UTF-16 unit only when every unit is ASCII: the check and the copy in one pass.
  if (out.write(text, source, "utf8") !== length) return -1;
  if (lines && dotted) lines.dotted = true;
  let at = start;
  // The line ends are found in the text, whose indexes are the bytes' offsets from `source` (ASCII):
  // a string search is a builtin, where a Buffer's indexOf is a call into the runtime for each line.
  for (let from = 0; ; ) {
    const end = text.indexOf("\n", from);
    const lineEnd = end < 0 ? length : end;
    out.copyWithin(at, source + from, source + lineEnd);
    at += lineEnd - from;
    if (end < 0) return at;
    out[at++] = 13;
    out[at++] = 10;
    from = end + 1;
  }
}

/** One fixed piece of a body given as parts, encoded for 7bit once, with what a message's writer needs to know of its lines. */
interface SevenBitPiece {
  /** Its bytes, line ends CRLF. */
  bytes: Buffer;
  chars: number;
  /** Characters before its first LF, and after its last (both `chars` without one). */
  firstLine: number;
  lastLine: number;
  newline: boolean;
  startsWithDot: boolean;
}

/** A version's fixed pieces as 7bit, or why they cannot go so (then every message's part is written from its text). */
interface SevenBitStatics {
  pieces: SevenBitPiece[] | undefined;
  /** Whether a line inside a piece starts with "." (after one of its LFs). */
  innerDot: boolean;
  /** Per multipart boundary: whether no piece holds it and none but the last ends with the start of it (a value could complete it). */
  boundaries: Map<string, boolean>;
}

/** Fixed pieces by the renderer's array of them (one per template version, kept while the version is). */
const sevenBitStatics = new WeakMap<readonly string[], SevenBitStatics>();
/** Characters a 7bit piece may not hold: NUL, CR, anything beyond ASCII. */
// eslint-disable-next-line no-control-regex
const NOT_SEVEN_BIT = /[\u0000\r\u0080-\uffff]/;
/** In a value: those and LF (a value with one is written character by character). */
// eslint-disable-next-line no-control-regex
const NOT_PLAIN_VALUE = /[\u0000\n\r\u0080-\uffff]/;

function sevenBitStaticsOf(statics: readonly string[]): SevenBitStatics {
  let known = sevenBitStatics.get(statics);
  if (known) return known;
  known = { pieces: [], innerDot: false, boundaries: new Map() };
  for (const text of statics) {
    const first = text.indexOf("\n");
    const last = text.lastIndexOf("\n");
    let longLine = false;
    // The lines between its first LF and its last: those of every message.
    for (let from = first + 1; first >= 0 && from <= last; ) {
      const end = text.indexOf("\n", from);
      if (end - from > MAX_LINE) longLine = true;
      from = end + 1;
    }
    if (NOT_SEVEN_BIT.test(text) || longLine || first > MAX_LINE || text.length - last - 1 > MAX_LINE) {
      known.pieces = undefined;
      break;
    }
    if (text.includes("\n.")) known.innerDot = true;
    known.pieces!.push({
      bytes: Buffer.from(text.replaceAll("\n", "\r\n"), "latin1"),
      chars: text.length,
      firstLine: first < 0 ? text.length : first,
      lastLine: text.length - last - 1,
      newline: first >= 0,
      startsWithDot: text.charCodeAt(0) === 46,
    });
  }
  sevenBitStatics.set(statics, known);
  return known;
}

/** Whether `boundary` can never occur in a body of these fixed pieces, given values without "=_" that do not end with "=". */
function boundaryClear(known: SevenBitStatics, statics: readonly string[], boundary: string): boolean {
  let clear = known.boundaries.get(boundary);
  if (clear !== undefined) return clear;
  clear = true;
  for (let i = 0; i < statics.length && clear; i += 1) {
    const text = statics[i]!;
    if (text.includes(boundary)) clear = false;
    // Ending with the boundary's first characters, a value or the pieces after could complete it.
    else if (i < statics.length - 1) for (let k = Math.min(boundary.length - 1, text.length); k > 0 && clear; k -= 1) if (text.endsWith(boundary.slice(0, k))) clear = false;
  }
  if (known.boundaries.size >= 8) known.boundaries.clear();
  known.boundaries.set(boundary, clear);
  return clear;
}

/**
 * writeSevenBit of `statics[0] + values[0] + statics[1] + … + statics[n]`
 * without that string: the fixed pieces are checked and encoded once (per
 * array of them, which a renderer gives for all the messages of a template
 * version), and per message only the values are checked and written. The
 * same bytes as writeSevenBit of the joined text (a test compares them),
 * and the same `lines.dotted`; -1 when the joined text could not go 7bit,
 * or when telling would need the joined text (a value holding "=_" or
 * ending with "=", which could be part of the boundary): then the caller
 * writes it from its text.
 */
export function writeSevenBitParts(statics: readonly string[], values: readonly string[], out: Buffer, start: number, boundary: string, lines?: { dotted: boolean }): number {
  if (values.length !== statics.length - 1) return -1;
  const known = sevenBitStaticsOf(statics);
  const pieces = known.pieces;
  if (!pieces || !boundaryClear(known, statics, boundary)) return -1;
  let at = start;
  /** Characters of the line being written so far, and whether nothing of it is written yet. */
  let line = 0;
  let lineStart = true;
  let dotted = known.innerDot;
  for (let i = 0; ; i += 1) {
    const piece = pieces[i]!;
    if (piece.chars > 0) {
      if (lineStart && piece.startsWithDot) dotted = true;
      if (piece.newline) {
        if (line + piece.firstLine > MAX_LINE) return -1;
        line = piece.lastLine;
        lineStart = line === 0;
      } else {
        line += piece.chars;
        if (line > MAX_LINE) return -1;
        lineStart = false;
      }
      at += piece.bytes.copy(out, at);
    }
    if (i === values.length) break;
    const value = values[i]!;
    const length = value.length;
    if (length === 0) continue;
    if (value.includes("=_") || value.charCodeAt(length - 1) === EQUALS) return -1;
    if (!NOT_PLAIN_VALUE.test(value)) {
      if (lineStart && value.charCodeAt(0) === 46) dotted = true;
      line += length;
      if (line > MAX_LINE) return -1;
      lineStart = false;
      at += out.write(value, at, "latin1");
      continue;
    }
    for (let k = 0; k < length; k += 1) {
      const code = value.charCodeAt(k);
      if (code === LF) {
        out[at++] = CR;
        out[at++] = LF;
        line = 0;
        lineStart = true;
        continue;
      }
      if (code === 0 || code === CR || code > 127) return -1;
      if (lineStart && code === 46) dotted = true;
      lineStart = false;
      if (++line > MAX_LINE) return -1;
      out[at++] = code;
    }
  }
  if (lines && dotted) lines.dotted = true;
  return at;
}

/** `text` in quoted-printable, in a buffer of its own (see writeQuotedPrintable). */
export function quotedPrintable(text: string): Buffer {
  const out = Buffer.allocUnsafe(quotedPrintableBound(text));
  return Buffer.from(out.subarray(0, writeQuotedPrintable(text, out, 0)));
}

/** Characters a header may carry as they are: printable ASCII and space. */
// eslint-disable-next-line no-control-regex
const PLAIN_HEADER = /^[\x20-\x7e]*$/;
/** Whether a display name can stand as atoms (else it is quoted). */
const ATOMS = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]+$/;
/** Longest encoded word (RFC 2047 2): 75 characters, `=?UTF-8?B?` and `?=` included. */
const ENCODED_WORD = 75;
const ENCODED_OVERHEAD = "=?UTF-8?B??=".length;

/**
 * Non-ASCII (or unfoldable) header text as RFC 2047 encoded words (UTF-8,
 * base64), each at most 75 characters and never splitting a character,
 * joined by folding whitespace: `firstRoom` is what is left on the first line.
 */
export function encodedWords(value: string, firstRoom = ENCODED_WORD): string {
  const words: string[] = [];
  let chunk = "";
  let chunkBytes = 0;
  let room = Math.max(ENCODED_OVERHEAD + 4, Math.min(firstRoom, ENCODED_WORD));
  // base64 of n bytes takes 4*ceil(n/3) characters.
  const fits = (bytes: number) => ENCODED_OVERHEAD + 4 * Math.ceil(bytes / 3) <= room;
  for (const char of value) {
    const bytes = Buffer.byteLength(char, "utf8");
    if (chunk && !fits(chunkBytes + bytes)) {
      words.push(`=?UTF-8?B?${Buffer.from(chunk, "utf8").toString("base64")}?=`);
      chunk = "";
      chunkBytes = 0;
      room = ENCODED_WORD;
    }
    chunk += char;
    chunkBytes += bytes;
  }
  if (chunk || words.length === 0) words.push(`=?UTF-8?B?${Buffer.from(chunk, "utf8").toString("base64")}?=`);
  return words.join("\r\n ");
}

/**
 * A header line (with its CRLF): printable ASCII folded at spaces to lines of
 * 78 characters where it can be (a longer word stays whole, up to 998);
 * anything else (non-ASCII, a control character, a word too long for a line)
 * as encoded words. Only for unstructured text (Subject) and values we made.
 */
export function headerLine(name: string, value: string): string {
  const prefix = `${name}: `;
  // ASCII that looks like an encoded word would be decoded by a reader: encoded itself.
  if (PLAIN_HEADER.test(value) && !value.includes("=?")) {
    if (prefix.length + value.length <= 78) return `${prefix}${value}\r\n`;
    const folded = foldAtSpaces(prefix, value);
    if (folded !== undefined) return folded;
  }
  return `${prefix}${encodedWords(value, 78 - prefix.length)}\r\n`;
}

/** Folds `prefix + value` before spaces into lines of at most 78 characters; undefined when a word would not fit in 998. */
function foldAtSpaces(prefix: string, value: string): string | undefined {
  const lines: string[] = [];
  let line = prefix.trimEnd();
  let first = true;
  for (const word of value.split(" ")) {
    const piece = ` ${word}`;
    // Never before an empty word (a run of spaces): the folded line would start with whitespace only up to the next, and readers drop such whitespace.
    if (!first && word !== "" && line.length + piece.length > 78 && line.trim().length > 0) {
      lines.push(line);
      line = piece;
    } else line += piece;
    if (line.length > 998) return undefined;
    first = false;
  }
  lines.push(line);
  return `${lines.join("\r\n")}\r\n`;
}

/** `Name <address>` (name quoted or encoded as it needs) or the bare address. */
export function mailbox(name: string, address: string): string {
  if (!name) return address;
  if (ATOMS.test(name)) return `${name} <${address}>`;
  if (PLAIN_HEADER.test(name) && !name.includes("=?")) return `"${name.replace(/(["\\])/g, "\\$1")}" <${address}>`;
  return `${encodedWords(name, 78 - "From: ".length)} <${address}>`;
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const two = (n: number) => (n < 10 ? `0${n}` : String(n));
let dateSecond = -1;
let dateText = "";

/** RFC 5322 date of `ms` in UTC (`Fri, 27 Nov 2026 06:48:31 +0000`); the last second's text is reused. */
export function rfc5322Date(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second === dateSecond) return dateText;
  const d = new Date(second * 1000);
  dateText = `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
  dateSecond = second;
  return dateText;
}
