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
