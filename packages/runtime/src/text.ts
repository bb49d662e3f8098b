// What counts as visible text, for fields that must say something (a reason,
// a name): a value made only of spaces, controls, format characters (U+200B
// zero width space, U+FEFF, U+2060 word joiner, bidi marks, the soft hyphen)
// or other default-ignorable code points (fillers, variation selectors)
// shows nothing, although String#trim keeps most of them. One rule, used by
// the services (trimInvisible, hasVisibleText) and by the gateway's JSON
// Schema patterns (invisibleBmpClass, derived from the same property set).

/** Characters that show nothing: Unicode White_Space, controls, format characters, default-ignorables, lone surrogates. */
const INVISIBLE = /[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]/u;
const LEADING_INVISIBLE = /^[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]+/u;
const TRAILING_INVISIBLE = /[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]+$/u;
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]/u;

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
 * The invisible characters of the Basic Multilingual Plane as the inside of a
 * regular-expression character class (`\u0000-\u0020\u007f-\u00a0…`), for
 * JSON Schema patterns read by tools without Unicode property escapes.
 * Invisible characters beyond the BMP (tag characters, musical format
 * marks) and lone surrogates are left to the services' check: regex engines
 * that read text as code points (Rust's, which schemathesis validates with)
 * refuse a pattern that names surrogates at all.
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
