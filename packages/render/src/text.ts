import Handlebars from "handlebars";
import { compile as compileHtmlToText, type FormatCallback } from "html-to-text";
import { Parser } from "htmlparser2";
import { isSafeUrl, schemeDecidedBy } from "./urls.js";

// The plain-text part of a message, derived from its rendered HTML.

/** Lines of the text part are wrapped at this width (spaces only; a longer word keeps its line). */
const WIDTH = 78;
const SELECTORS = [
  // MJML's hidden preview text (mj-preview) is not part of the message body.
  { selector: "div[style*='display:none']", format: "skip" },
  { selector: "img", format: "skip" },
  { selector: "a", options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
  // Tables of data (mj-table, a table in an mj-text) as rows and aligned
  // columns, cells as written (no upper-cased headers); a cell's link keeps
  // its whole URL on one line, however wide. MJML's layout tables (role
  // "presentation": sections, buttons, social icons) stay blocks, as before.
  { selector: "table", format: "dataTable", options: { uppercaseHeaderCells: false, maxColumnWidth: 60 } },
  { selector: "table[role=presentation]", format: "block" },
  // Cells of a layout table are inline: a space between them, never glued words.
  { selector: "td", format: "spacedCell" },
  { selector: "th", format: "spacedCell" },
];
/** An inline cell with a (collapsible) space on either side. */
const spacedCell: FormatCallback = (elem, walk, builder) => {
  builder.addInline(" ");
  walk(elem.children, builder);
  builder.addInline(" ");
};
const FORMATTERS = { spacedCell };
// Compiled once per process and reused (≈ 0.3 ms per message against 0.7 ms
// when built per call; TOOLCHAIN.md).
const toText = compileHtmlToText({ wordwrap: WIDTH, selectors: SELECTORS, formatters: FORMATTERS });
/** For a text part compiled ahead: wrapped once its variables are filled (rewrap). */
const toTextUnwrapped = compileHtmlToText({ wordwrap: false, selectors: SELECTORS, formatters: FORMATTERS });

const BODY_START = /<body[\s>]/i;

/**
 * Derives the plain-text part of an HTML email. html-to-text walks the
 * document recursively: give it HTML whose element nesting was checked
 * (scanMarkup), as the renderer does.
 */
export function htmlToText(html: string): string {
  return toText(bodyOf(html)).trim();
}

/** Only the body becomes text; handing over the body alone spares parsing the head (MJML's styles and Outlook conditionals), ≈ 30 % of the cost. */
function bodyOf(html: string): string {
  const body = html.search(BODY_START);
  return body > 0 ? html.slice(body) : html;
}


/** Fills a text part compiled once per template version (compileTextTemplate). */
export type TextTemplate = (context: Record<string, unknown>) => string;

// A {{path}} of the template: the only placeholder a text part compiled ahead
// may hold. Anything else of Handlebars' (blocks, else, comments, partials,
// triple or whitespace-controlled mustaches, escapes) keeps the per-message path.
const SIMPLE_MUSTACHE = /\{\{\s*([A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*)*)\s*\}\}/g;
const MARKER_START = "\uE000";
const MARKER_END = "\uE001";
/** A marker, alone or as a link's shown href (` [marker]`, which html-to-text leaves out when the href is empty). */
const MARKER = / \[\uE000(\d+)\uE001\]|\uE000(\d+)\uE001/g;
/** Names Handlebars may treat as helpers: such a placeholder keeps the per-message path. */
const HELPER_NAMES = new Set(["if", "unless", "each", "with", "log", "lookup", "helperMissing", "blockHelperMissing"]);

/** Text between placeholders, or a placeholder: its path, and whether it is a link's href shown in brackets. */
type Segment = string | { path: string[]; bracketed: boolean };

/** A value as the HTML renderer writes it (Handlebars: nothing for null and undefined), read as html-to-text reads a text node. */
function asText(value: unknown): string {
  return (value === null || value === undefined ? "" : String(value)).replace(/[ \t\r\n\f]+/g, " ");
}

/**
 * What html-to-text shows for a link whose whole href is this value, as the
 * HTML has it: nothing when the URL guard replaced it with `#` (urls.ts), or
 * for an empty or `#…` href; a `mailto:` without its scheme.
 */
function linkTarget(value: unknown): string {
  const raw = value === null || value === undefined ? "" : String(value);
  if (!isSafeUrl(Handlebars.escapeExpression(raw))) return "";
  const href = raw.replace(/^mailto:/, "");
  return href === "" || href.startsWith("#") ? "" : ` [${asText(href)}]`;
}

/** Handlebars' lookup of a path: own properties only (it refuses prototype properties), `this` the context itself. */
function lookup(context: Record<string, unknown>, path: readonly string[]): unknown {
  let value: unknown = context;
  for (const part of path) {
    if (value === null || typeof value !== "object" || !Object.prototype.hasOwnProperty.call(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Values the compiled text is checked with against the converted message: short, empty (missing variables), and long enough to wrap. */
const PROBES = ["Ab", "", "Lorem-ipsum-dolor-sit-amet-consectetur-adipiscing-elit"];

/**
 * The plain-text part of a template version, derived once: html-to-text runs
 * (without wrapping) on the template with each `{{path}}` standing in as a
 * marker, and that text is filled per message and then wrapped, instead of
 * parsing every message's HTML, the largest cost of a campaign's rendering.
 * `renderHtml` renders the version's HTML: the compiled text is kept only if,
 * filled with probe values, it reads exactly as the converted HTML does. What
 * may still differ for other values: a value holding `[]` after a space, a
 * link whose text and href are different placeholders, which shows its href
 * even when the two values match, and a link whose text is its own href
 * (`<a href="{{x}}">{{x}}</a>`) with a value that starts with `mailto:` or
 * holds spaces, whose converted message shows the href too. A link's href the
 * URL guard refuses (urls.ts) reads as the HTML has it: not shown.
 *
 * Undefined (each message is then converted as before) when the template has
 * anything but simple placeholders in its body (blocks and the like), one in
 * an attribute other than a link's href, in a heading (html-to-text
 * upper-cases those) or in a data table (its columns are as wide as the
 * values), or when the probes read differently.
 */
export function compileTextTemplate(htmlTemplate: string, renderHtml: (context: Record<string, unknown>) => string): TextTemplate | undefined {
  if (htmlTemplate.includes(MARKER_START) || htmlTemplate.includes(MARKER_END)) return undefined;
  const paths: string[] = [];
  const marked = htmlTemplate.replace(SIMPLE_MUSTACHE, (_, path: string) => {
    // One marker per path: a link whose text is its own href reads as one.
    let index = paths.indexOf(path);
    if (index < 0) index = paths.push(path) - 1;
    return `${MARKER_START}${index}${MARKER_END}`;
  });
  if (paths.some((path) => HELPER_NAMES.has(path.split(".")[0]!))) return undefined;
  // Handlebars' syntax left in the body after the simple placeholders (the
  // head, which holds CSS and never becomes text, aside): not for this path.
  const body = Math.max(0, marked.search(BODY_START));
  if (marked.includes("{{", body) || marked.includes("}}", body)) return undefined;
  if (paths.length > 0 && !placeholdersReadAlike(marked)) return undefined;
  const text = toTextUnwrapped(bodyOf(marked)).trim();

  const segments: Segment[] = [];
  let at = 0;
  for (const match of text.matchAll(MARKER)) {
    if (match.index > at) segments.push(text.slice(at, match.index));
    const path = paths[Number(match[1] ?? match[2])]!.split(".");
    segments.push({ path: path[0] === "this" ? path.slice(1) : path, bracketed: match[1] !== undefined });
    at = match.index + match[0].length;
  }
  if (at < text.length) segments.push(text.slice(at));
  if (segments.some((segment) => typeof segment === "string" && (segment.includes(MARKER_START) || segment.includes(MARKER_END)))) return undefined;

  const textOf: TextTemplate = (context) => {
    let out = "";
    /** Whether the last piece appended (or skipped, when empty) was a value. */
    let afterValue = false;
    for (const segment of segments) {
      if (typeof segment === "string") {
        out = joinAtValue(out, segment, afterValue, false);
        afterValue = false;
      } else {
        const value = lookup(context, segment.path);
        out = joinAtValue(out, segment.bracketed ? linkTarget(value) : asText(value), afterValue, true);
        afterValue = true;
      }
    }
    // None at a line's end, as html-to-text writes it.
    return rewrap(out.replace(/ +$/gm, "").trim());
  };
  for (const probe of PROBES) {
    const context = contextOf(paths, probe);
    if (context === undefined || textOf(context) !== htmlToText(renderHtml(context))) return undefined;
  }
  return textOf;
}

/**
 * `out` and the next piece, with spaces run together where a value meets its
 * neighbours, as html-to-text does within a block (an empty value leaves two
 * spaces; a value may start or end with one): one space, after a non-space.
 * A run of two or more spaces that the template's text itself ends with is a
 * data table's column padding (html-to-text writes no other): it stays, and the
 * value's own leading spaces go, as a table cell is trimmed.
 */
function joinAtValue(out: string, piece: string, afterValue: boolean, isValue: boolean): string {
  if (piece === "" || (!afterValue && !isValue)) return out + piece;
  const trailing = out.length - out.replace(/ +$/, "").length;
  const leading = piece.length - piece.replace(/^ +/, "").length;
  if (trailing + leading < 2 || trailing === out.length || /\s/.test(out[out.length - trailing - 1]!)) return out + piece;
  if (!afterValue && trailing >= 2) return out + piece.slice(leading);
  return `${out.slice(0, out.length - trailing)} ${piece.slice(leading)}`;
}

/** A context giving every path `value`; undefined when one path is a prefix of another (`a` and `a.b`). */
export function contextOf(paths: readonly string[], value: string): Record<string, unknown> | undefined {
  const context: Record<string, unknown> = {};
  for (const path of paths) {
    const parts = path.split(".");
    let node = context;
    for (const part of parts.slice(0, -1)) {
      const next = node[part] ?? (node[part] = {});
      if (typeof next !== "object") return undefined;
      node = next as Record<string, unknown>;
    }
    const last = parts.at(-1)!;
    if (typeof node[last] === "object") return undefined;
    node[last] = value;
  }
  return context;
}

// What html-to-text puts before a block's first line, and before each line it
// wraps onto: list items (" * ", " 1. ") continue indented, quotes continue quoted.
const PREFIX = /^(?:( \* | \d+\. )|(> )|( +))/;

/** Wraps lines longer than WIDTH at spaces, greedily, as html-to-text does. */
function rewrap(text: string): string {
  const lines = text.split("\n");
  if (!lines.some((line) => line.length > WIDTH)) return text;
  return lines
    .map((line) => {
      if (line.length <= WIDTH) return line;
      const prefix = PREFIX.exec(line);
      const first = prefix?.[0] ?? "";
      const next = prefix?.[2] ?? " ".repeat(first.length);
      const words = line.slice(first.length).split(" ");
      const lines: string[] = [];
      let current = first + words[0]!;
      for (const word of words.slice(1)) {
        if (current.length + 1 + word.length <= WIDTH) current += ` ${word}`;
        else {
          lines.push(current);
          current = next + word;
        }
      }
      lines.push(current);
      return lines.join("\n");
    })
    .join("\n");
}

/**
 * Whether every placeholder sits in text outside headings and data tables
 * (a value changes a table's column widths), or in such an <a href>
 * that is one placeholder (its value is checked as the URL guard does, in
 * linkTarget) or whose text before the first placeholder decides the guard's
 * outcome whatever the values (the probes then check it).
 */
function placeholdersReadAlike(marked: string): boolean {
  let alike = true;
  let headings = 0;
  /** Per open table, whether it is a data table (laid out in columns, whose widths its values would change). */
  const tables: boolean[] = [];
  let dataTables = 0;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (HEADINGS.has(name)) headings++;
        if (name === "table") {
          const data = attributes.role !== "presentation";
          tables.push(data);
          if (data) dataTables++;
        }
        for (const [attribute, value] of Object.entries(attributes)) {
          if (!value.includes(MARKER_START)) continue;
          if (!(name === "a" && attribute === "href") || dataTables > 0) alike = false;
          else if (!/^\uE000\d+\uE001$/.test(value) && !schemeDecidedBy(value.slice(0, value.indexOf(MARKER_START)))) alike = false;
        }
      },
      onclosetag(name) {
        if (HEADINGS.has(name) && headings > 0) headings--;
        if (name === "table" && tables.length > 0 && tables.pop()) dataTables--;
      },
      ontext(text) {
        if ((headings > 0 || dataTables > 0) && text.includes(MARKER_START)) alike = false;
      },
    },
    { decodeEntities: true },
  );
  parser.write(marked);
  parser.end();
  return alike;
}

const HEADINGS = new Set(["h1", "h2", "h3", "h4", "h5", "h6"]);
