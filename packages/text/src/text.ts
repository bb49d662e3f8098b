// What counts as visible text, for fields that must say something (a reason,
// a name): a value made only of spaces, controls, format characters (U+200B
// zero width space, U+FEFF, U+2060 word joiner, bidi marks, the soft hyphen)
// or other default-ignorable code points (the Hangul fillers U+115F, U+1160,
// U+3164, U+FFA0, variation selectors) shows nothing, although String#trim
// keeps most of them. Neither class holds a few symbols that fonts draw as
// nothing at all, which lists of "invisible characters" pass around for
// exactly that: U+2800 BRAILLE PATTERN BLANK, U+1D159 MUSICAL SYMBOL NULL
// NOTEHEAD and U+16FE4 KHITAN SMALL SCRIPT FILLER; they count as invisible
// too. One rule, used by the services (trimInvisible, hasVisibleText) and by
// the gateway's JSON Schema patterns (invisibleBmpClass, derived from the
// same set), with one wording (visibleTextRule) for both to answer with.

/** The blank-looking symbols Unicode classes as neither space, control, format nor default-ignorable. */
const BLANK_SYMBOLS = "\\u{2800}\\u{1D159}\\u{16FE4}";
/** Characters that show nothing: Unicode White_Space, controls, format characters, default-ignorables, lone surrogates, the blank symbols. */
const INVISIBLE_CLASS = `\\p{White_Space}\\p{Cc}\\p{Cf}\\p{Default_Ignorable_Code_Point}\\p{Cs}${BLANK_SYMBOLS}`;
const INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]`, "u");
const LEADING_INVISIBLE = new RegExp(`^[${INVISIBLE_CLASS}]+`, "u");
const TRAILING_INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]+$`, "u");
const VISIBLE = new RegExp(`[^${INVISIBLE_CLASS}]`, "u");

/** The text without invisible characters at either end (inner ones stay: a zero width joiner inside an emoji is meant). */
export function trimInvisible(text: string): string {
  return text.replace(LEADING_INVISIBLE, "").replace(TRAILING_INVISIBLE, "");
}

/** Whether the text holds at least one character that shows. */
export function hasVisibleText(text: string): boolean {
  return VISIBLE.test(text);
}

/** Whether one character (a code point) shows nothing. */
export function isInvisible(char: string): boolean {
  return INVISIBLE.test(char);
}

/**
 * How a field under this rule is described to a caller, by the gateway's
 * pattern message and by the service alike, so that a value refused at the
 * edge (an invisible character of the BMP) and one refused by the service
 * (one beyond it, such as U+1D159) read the same.
 */
export function visibleTextRule(maxLength: number): string {
  return `1-${maxLength} characters with visible text (not only spaces or invisible characters such as U+200B or U+2800), no control characters`;
}

/**
 * The invisible characters of the Basic Multilingual Plane as the inside of a
 * regular-expression character class (`\u0000-\u0020\u007f-\u00a0…`), for
 * JSON Schema patterns read by tools without Unicode property escapes.
 * Invisible characters beyond the BMP (tag characters, musical format
 * marks and the null notehead, the Khitan filler) and lone surrogates are
 * left to the services' check: regex engines that read text as code points
 * (Rust's, which schemathesis validates with) refuse a pattern that names
 * surrogates at all.
 */
export function invisibleBmpClass(): string {
  if (bmpClass !== undefined) return bmpClass;
  const hex = (code: number) => `\\u${code.toString(16).padStart(4, "0")}`;
  const parts: string[] = [];
  let start = -1;
  for (let code = 0; code <= 0x10000; code++) {
    const surrogate = code >= 0xd800 && code <= 0xdfff;
    const invisible = code <= 0xffff && !surrogate && INVISIBLE.test(String.fromCharCode(code));
    if (invisible && start < 0) start = code;
    if (!invisible && start >= 0) {
      parts.push(start === code - 1 ? hex(start) : `${hex(start)}-${hex(code - 1)}`);
      start = -1;
    }
  }
  bmpClass = parts.join("");
  return bmpClass;
}
let bmpClass: string | undefined;
