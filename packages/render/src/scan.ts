import { TEMPLATE_LIMITS } from "./limits.js";

// Iterative scans of untrusted template text, linear in its length and never
// recursive: they run before anything that recurses on the structure
// (Handlebars' parser and compiler, html-to-text's DOM walk), so that a
// template nested 100,000 deep is measured and refused, not a stack overflow.
//
// Each scan follows the tokenizer it stands in front of closely enough to be an
// upper bound: it never reports less nesting than the real parser builds.

/** Where a measurement peaked, for the problem that names it. */
export interface Peak {
  value: number;
  /** 1-based line where the value was first reached (0 when there is none). */
  line: number;
}

export interface HandlebarsShape {
  /**
   * Deepest nesting: blocks (`{{#…}}`, `{{^…}}`) plus each `{{else …}}` chained
   * inside one (Handlebars nests a chained else as a block in the inverse), plus
   * sub-expressions `( … )` inside a mustache.
   */
  depth: Peak;
  /**
   * Mustaches of every kind but comments: `{{x}}`, `{{{x}}}`, `{{#…}}`,
   * `{{/…}}`, `{{else}}`; `line` is that of the first one beyond
   * TEMPLATE_LIMITS.expressions (0 within them).
   */
  expressions: Peak;
  /** A raw block (`{{{{raw}}}}`): not in the subset, and not scanned further. */
  rawBlockLine: number;
}

/** Counts the lines of `source` incrementally as a scan moves forward. */
class LineCounter {
  private line = 1;
  private at = 0;

  constructor(private readonly source: string) {}

  /** Line of `index`; indexes must not decrease between calls. */
  lineOf(index: number): number {
    let i = this.source.indexOf("\n", this.at);
    while (i !== -1 && i < index) {
      this.line++;
      i = this.source.indexOf("\n", i + 1);
    }
    this.at = index;
    return this.line;
  }
}

const raise = (peak: Peak, value: number, lines: LineCounter, index: number) => {
  if (value > peak.value) {
    peak.value = value;
    peak.line = lines.lineOf(index);
  }
};

/** What a mustache is, for `onMustache`: a block's opening, its end, a chained `{{else …}}`, a bare `{{else}}` (or `{{^}}`), a comment, or anything else. */
export type MustacheKind = "open" | "close" | "chain" | "else" | "comment" | "other";

/**
 * Measures a Handlebars source the way Handlebars' lexer reads it (comments,
 * `\{{` escapes, strings and `[segments]` inside mustaches), without parsing it.
 * Syntax errors are left to the parser: the scan only promises that the parser
 * will not build anything deeper or larger than it reports. `onMustache` gets
 * each complete mustache, comments included, in order: `[start, end)` of its
 * text (from `{{` to after `}}`) and its kind.
 */
export function scanHandlebars(source: string, onMustache?: (start: number, end: number, kind: MustacheKind) => void): HandlebarsShape {
  const lines = new LineCounter(source);
  const shape: HandlebarsShape = { depth: { value: 0, line: 0 }, expressions: { value: 0, line: 0 }, rawBlockLine: 0 };
  /** Per open block: 1 + the `{{else …}}` chained in it so far. */
  const blocks: number[] = [];
  let depth = 0;
  let expressions = 0;
  let pos = 0;
  const n = source.length;

  while (pos < n) {
    const open = source.indexOf("{{", pos);
    if (open === -1) break;
    // `\{{` is literal text (but `\\{{` is a backslash and a mustache).
    if (source.charCodeAt(open - 1) === 0x5c && source.charCodeAt(open - 2) !== 0x5c) {
      pos = open + 2;
      continue;
    }
    if (source.startsWith("{{{{", open)) {
      shape.rawBlockLine = lines.lineOf(open);
      return shape;
    }
    let i = open + 2;
    if (source[i] === "~") i++;
    // Comments: `{{!-- … --}}` ends at the first `--}}`, `{{! … }}` at the first `}}`.
    if (source[i] === "!") {
      pos = source.startsWith("!--", i) ? endOfLongComment(source, i + 3) : endOf(source, "}}", i + 1);
      onMustache?.(open, pos, "comment");
      continue;
    }
    expressions++;
    shape.expressions.value = expressions;
    if (expressions === TEMPLATE_LIMITS.expressions + 1) shape.expressions.line = lines.lineOf(open);
    const kind = mustacheKind(source, i);
    if (kind === "open") {
      blocks.push(1);
      depth++;
      raise(shape.depth, depth, lines, open);
    } else if (kind === "chain" && blocks.length > 0) {
      blocks[blocks.length - 1]!++;
      depth++;
      raise(shape.depth, depth, lines, open);
    } else if (kind === "close" && blocks.length > 0) {
      depth -= blocks.pop()!;
    }
    // The rest of the mustache: its end is the first `}}` outside strings and
    // [segments]; parentheses open sub-expressions.
    let parens = 0;
    for (;;) {
      if (i >= n) return shape;
      const c = source.charCodeAt(i);
      if (c === 0x7d /* } */ && source.charCodeAt(i + 1) === 0x7d) {
        pos = i + 2;
        // `{{{x}}}` ends one brace later.
        if (source.charCodeAt(open + 2) === 0x7b && source.charCodeAt(pos) === 0x7d) pos++;
        onMustache?.(open, pos, kind);
        break;
      }
      if (c === 0x22 /* " */ || c === 0x27 /* ' */) i = endOfQuoted(source, i, c);
      else if (c === 0x5b /* [ */) i = endOfQuoted(source, i, 0x5d /* ] */);
      else if (c === 0x28 /* ( */) {
        parens++;
        raise(shape.depth, depth + parens, lines, open);
        i++;
      } else {
        if (c === 0x29 /* ) */ && parens > 0) parens--;
        i++;
      }
    }
  }
  return shape;
}

/** What the lexer makes of the mustache whose content starts at `i` (after `{{` and `~`). */
function mustacheKind(source: string, i: number): Exclude<MustacheKind, "comment"> {
  const c = source[i];
  if (c === "#") return "open"; // {{#x}}, {{#>partial}}, {{#*decorator}}
  if (c === "/") return "close";
  if (c === "^") return isBareElse(source, i + 1) ? "else" : "open"; // {{^}} is an else; {{^x}} an inverse block
  let j = i;
  while (j < source.length && /\s/.test(source[j]!)) j++;
  if (source.startsWith("else", j) && !/[A-Za-z0-9_]/.test(source[j + 4] ?? "")) {
    return isBareElse(source, j + 4) ? "else" : "chain";
  }
  return "other";
}

/** Whether only whitespace and an optional `~` stand before the closing `}}`. */
function isBareElse(source: string, i: number): boolean {
  let j = i;
  while (j < source.length && /\s/.test(source[j]!)) j++;
  if (source[j] === "~") j++;
  return source.startsWith("}}", j);
}

/** Index after a quoted string (or `[segment]`) starting at `i`; an unclosed one is one character. */
function endOfQuoted(source: string, i: number, close: number): number {
  for (let j = i + 1; j < source.length; j++) {
    const c = source.charCodeAt(j);
    if (c === 0x5c /* \ */ && source.charCodeAt(j + 1) === close) j++;
    else if (c === close) return j + 1;
  }
  return i + 1;
}

function endOf(source: string, token: string, from: number): number {
  const at = source.indexOf(token, from);
  return at === -1 ? source.length : at + token.length;
}

function endOfLongComment(source: string, from: number): number {
  for (let at = source.indexOf("--", from); at !== -1; at = source.indexOf("--", at + 1)) {
    const k = source[at + 2] === "~" ? at + 3 : at + 2;
    if (source.startsWith("}}", k)) return k + 2;
  }
  return source.length;
}

// htmlparser2's tree building (the parser html-to-text walks), as far as depth goes.
/** Elements that never hold children. */
const VOID = new Set(["area", "base", "basefont", "br", "col", "command", "embed", "frame", "hr", "img", "input", "isindex", "keygen", "link", "meta", "param", "source", "track", "wbr"]);
/** Elements whose content is text up to their end tag. */
const RAW_TEXT = new Set(["script", "style", "title", "textarea", "xmp"]);
const P = new Set(["p"]);
const FORM = new Set(["input", "option", "optgroup", "select", "button", "datalist", "textarea"]);
/** Opening the key closes any of these on top of the stack first (htmlparser2's `openImpliesClose`). */
const IMPLIES_CLOSE = new Map<string, ReadonlySet<string>>([
  ["tr", new Set(["tr", "th", "td"])],
  ["th", new Set(["th"])],
  ["td", new Set(["thead", "th", "td"])],
  ["body", new Set(["head", "link", "script"])],
  ["li", new Set(["li"])],
  ["option", new Set(["option"])],
  ["optgroup", new Set(["optgroup", "option"])],
  ["dd", new Set(["dd", "dt"])],
  ["dt", new Set(["dd", "dt"])],
  ["rt", new Set(["rt", "rp"])],
  ["rp", new Set(["rt", "rp"])],
  ["tbody", new Set(["thead", "tbody"])],
  ["tfoot", new Set(["thead", "tbody"])],
  ...["select", "input", "output", "button", "datalist", "textarea"].map((t) => [t, FORM] as [string, ReadonlySet<string>]),
  ...["h1", "h2", "h3", "h4", "h5", "h6", "address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "main", "nav", "ol", "pre", "section", "table", "ul", "p"].map(
    (t) => [t, P] as [string, ReadonlySet<string>],
  ),
]);
/** Where `<x/>` closes itself (SVG and MathML), and the elements that switch back to HTML inside them. */
const FOREIGN = new Set(["svg", "math"]);
const INTEGRATION = new Set(["mi", "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject"]);

const isAlpha = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;

/**
 * The deepest element nesting an HTML parser (htmlparser2, in HTML mode) builds
 * from `html`: void elements, raw-text elements, implied end tags, end tags
 * that close everything above their match, and self-closing tags only in SVG
 * and MathML, as it does. Comments and declarations hold no elements.
 * `selfClosing`: every `<x/>` closes itself (markup read as XML, as MJML is).
 */
export function scanMarkup(html: string, options: { selfClosing?: boolean } = {}): { depth: Peak } {
  const lines = new LineCounter(html);
  const peak: Peak = { value: 0, line: 0 };
  const stack: string[] = [];
  /** How many of each name are open, so that an end tag finds its match in O(1). */
  const open = new Map<string, number>();
  const foreign: boolean[] = [];
  const n = html.length;
  const pop = () => {
    const name = stack.pop()!;
    open.set(name, open.get(name)! - 1);
  };
  let pos = 0;
  while (pos < n) {
    const lt = html.indexOf("<", pos);
    if (lt === -1) break;
    const next = html.charCodeAt(lt + 1);
    if (next === 0x21 /* ! */) {
      pos = html.startsWith("<!--", lt) ? endOf(html, "-->", lt + 2) : endOf(html, ">", lt + 2);
      continue;
    }
    if (next === 0x3f /* ? */) {
      pos = endOf(html, ">", lt + 2);
      continue;
    }
    const closing = next === 0x2f; /* / */
    const nameStart = closing ? lt + 2 : lt + 1;
    if (!isAlpha(html.charCodeAt(nameStart))) {
      // `</` + something else is a bogus comment up to `>`; a lone `<` is text.
      pos = closing ? endOf(html, ">", nameStart) : lt + 1;
      continue;
    }
    let i = nameStart + 1;
    while (i < n) {
      const c = html.charCodeAt(i);
      if (isSpace(c) || c === 0x2f || c === 0x3e) break;
      i++;
    }
    const name = html.slice(nameStart, i).toLowerCase();
    const { end, selfClosing } = endOfTag(html, i);
    pos = end;

    if (closing) {
      if (FOREIGN.has(name) || INTEGRATION.has(name)) foreign.pop();
      if (!VOID.has(name) && (open.get(name) ?? 0) > 0) {
        while (stack[stack.length - 1] !== name) pop();
        pop();
      }
      continue;
    }
    const implied = IMPLIES_CLOSE.get(name);
    if (implied) while (stack.length > 0 && implied.has(stack[stack.length - 1]!)) pop();
    if (VOID.has(name)) continue;
    if (FOREIGN.has(name)) foreign.push(true);
    else if (INTEGRATION.has(name)) foreign.push(false);
    if (selfClosing && (options.selfClosing || foreign[foreign.length - 1] === true)) continue;
    stack.push(name);
    open.set(name, (open.get(name) ?? 0) + 1);
    raise(peak, stack.length, lines, lt);
    if (RAW_TEXT.has(name)) pos = endOfRawText(html, name, pos);
  }
  return { depth: peak };
}

/** After a tag name at `i`: the index after the tag's `>`, and whether it ended with `/>`. */
function endOfTag(html: string, i: number): { end: number; selfClosing: boolean } {
  const n = html.length;
  let afterName = false;
  while (i < n) {
    const c = html.charCodeAt(i);
    if (c === 0x3e /* > */) return { end: i + 1, selfClosing: html.charCodeAt(i - 1) === 0x2f && !afterName };
    if (c === 0x3d /* = */) {
      // An attribute value: quoted up to its quote, or up to a space or `>`.
      i++;
      while (i < n && isSpace(html.charCodeAt(i))) i++;
      const q = html.charCodeAt(i);
      if (q === 0x22 || q === 0x27) {
        const close = html.indexOf(q === 0x22 ? '"' : "'", i + 1);
        i = close === -1 ? n : close + 1;
        afterName = false;
      } else {
        while (i < n && !isSpace(html.charCodeAt(i)) && html.charCodeAt(i) !== 0x3e) i++;
        // `<a href=x/>`: the slash belongs to the value.
        afterName = true;
      }
      continue;
    }
    if (!isSpace(c)) afterName = false;
    i++;
  }
  return { end: n, selfClosing: false };
}

function endOfRawText(html: string, name: string, from: number): number {
  const re = new RegExp(`</${name}[\\s/>]`, "ig");
  re.lastIndex = from;
  const m = re.exec(html);
  return m ? m.index : html.length;
}
