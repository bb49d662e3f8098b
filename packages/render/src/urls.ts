import { Tokenizer } from "htmlparser2";
import type { TemplateProblem } from "./bounds.js";
import { scanHandlebars, type MustacheKind } from "./scan.js";

// Values in URL attributes. Handlebars escapes what a `{{variable}}` writes
// into HTML, so a value cannot leave its attribute, but it can still be a whole
// URL of its own: `href="{{url}}"` with `javascript:alert(1)` (or
// `JaVaScRiPt:`, `java&#115;cript:`, ` javascript:`, `data:…`, `vbscript:…`)
// is a link that runs script where the HTML is shown (a preview, a webmail).
// So every URL attribute whose value holds a placeholder is checked per
// message, whole, after rendering: only http(s), mailto, tel and relative URLs
// pass; anything else becomes `#` (links) or `about:blank` (what is loaded).
// An event-handler attribute (`onclick="…{{x}}…"`) or an iframe's `srcdoc`
// holding a placeholder is rendered empty: a value there is script or markup
// (escaping does not help: the browser decodes the attribute first).
//
// How: when a version is compiled, the HTML is tokenized once (placeholders
// masked, so that their text cannot confuse the tokenizer) and each such
// attribute value is wrapped in a block of our own helper, `{{#$url "#"}}…{{/$url}}`,
// which renders the value and checks it. Authors cannot write that helper:
// `$` is not allowed in their names.

/** The helper wrapping a checked attribute value; its argument is the replacement of an unsafe value ("" for script). */
export const URL_GUARD_HELPER = "$url";

/** Attributes whose value is a URL that a browser follows or loads (lower case). */
const URL_ATTRIBUTES: ReadonlySet<string> = new Set([
  "href",
  "src",
  "srcset",
  "action",
  "formaction",
  "background",
  "cite",
  "data",
  "poster",
  "longdesc",
  "usemap",
  "xlink:href",
  "dynsrc",
  "lowsrc",
  "codebase",
  "classid",
  "manifest",
  "icon",
  "profile",
  "archive",
]);

/** What a link gets instead of an unsafe URL: a link to nowhere, which text parts leave out. */
export const UNSAFE_LINK = "#";
/** What a loaded URL (image, frame, form target) gets instead of an unsafe one. */
export const UNSAFE_RESOURCE = "about:blank";

const SAFE_SCHEME = /^(?:https?|mailto|tel):/i;
// eslint-disable-next-line no-control-regex
const LEADING_IGNORED = /^[\u0000-\u0020]+/;
// eslint-disable-next-line no-control-regex
const SCHEME_MATERIAL = /[:&\u0000-\u001f\u007f]/;

/**
 * Whether an attribute value, as it stands in the HTML (escaped), is a URL
 * we let through: http, https, mailto or tel, or relative (no scheme). A
 * browser strips leading spaces and control characters and ignores tabs and
 * line breaks anywhere, and decodes character references (`&#58;` is `:`), so
 * a value whose part before the first `/`, `?` or `#` holds a `:`, a `&` or a
 * control character is refused unless it starts with one of those schemes:
 * stricter than the URL standard (a relative `a&amp;b` is refused too), never
 * looser.
 */
export function isSafeUrl(attributeValue: string): boolean {
  const value = attributeValue.replace(LEADING_IGNORED, "");
  if (SAFE_SCHEME.test(value)) return true;
  const end = value.search(/[/?#]/);
  return !SCHEME_MATERIAL.test(end === -1 ? value : value.slice(0, end));
}

/** `srcset`: each candidate (`url 2x, url 3x`) is a URL. */
function isSafeSrcset(attributeValue: string): boolean {
  return attributeValue.split(",").every((candidate) => isSafeUrl(candidate.trim().split(/\s+/)[0] ?? ""));
}

/**
 * Whether the text before a value's first placeholder already decides that
 * the whole value passes whatever the placeholders hold: it starts with a
 * safe scheme, or a `/`, `?` or `#` comes before anything that could make one
 * (`/path/{{x}}`, `https://example.com/{{x}}`).
 */
export function schemeDecidedBy(prefix: string): boolean {
  const value = prefix.replace(LEADING_IGNORED, "");
  if (SAFE_SCHEME.test(value)) return true;
  const end = value.search(/[/?#]/);
  return end !== -1 && !SCHEME_MATERIAL.test(value.slice(0, end));
}

/** Renders the wrapped value (`options.fn`) and lets it through only if it is safe. */
export function urlGuard(rendered: string, replacement: string, attribute: "url" | "srcset" | "script"): string {
  if (attribute === "script") return "";
  return (attribute === "srcset" ? isSafeSrcset(rendered) : isSafeUrl(rendered)) ? rendered : replacement;
}

interface Span {
  start: number;
  end: number;
  kind: MustacheKind;
}

interface GuardedValue {
  start: number;
  end: number;
  /** The helper's replacement argument and the check it runs. */
  replacement: string;
  attribute: "url" | "srcset" | "script";
}

export interface GuardedHtml {
  /** The HTML with each guarded value wrapped (the input itself when there is none). */
  html: string;
  /** How many values were wrapped. */
  guarded: number;
  /** Values that cannot be wrapped: a `{{#block}}` opens or closes inside one and ends outside it. */
  problems: TemplateProblem[];
}

/**
 * Wraps every URL attribute value holding a placeholder (and every value of an
 * attribute whose name holds one, since it may turn out to be any attribute)
 * in the guard helper, and every event-handler or `srcdoc` value holding one
 * likewise to render empty. Run on a version's compiled HTML once; linear in its length.
 */
export function guardUrlAttributes(html: string): GuardedHtml {
  if (!html.includes("{{")) return { html, guarded: 0, problems: [] };
  const spans: Span[] = [];
  scanHandlebars(html, (start, end, kind) => spans.push({ start, end, kind }));
  if (spans.length === 0) return { html, guarded: 0, problems: [] };

  // Placeholders masked with letters, same length: the tokenizer sees where
  // they are (a tag, a name, a value) but never a quote or `>` inside them.
  const pieces: string[] = [];
  let at = 0;
  for (const span of spans) {
    pieces.push(html.slice(at, span.start), "x".repeat(span.end - span.start));
    at = span.end;
  }
  pieces.push(html.slice(at));
  const masked = pieces.join("");

  const values: GuardedValue[] = [];
  const problems: TemplateProblem[] = [];
  tokenizeAttributes(masked, 0, spans, values, problems, html);
  if (values.length === 0) return { html, guarded: 0, problems };

  const out: string[] = [];
  at = 0;
  for (const value of values) {
    out.push(
      html.slice(at, value.start),
      `{{#${URL_GUARD_HELPER} ${JSON.stringify(value.replacement)} ${JSON.stringify(value.attribute)}}}`,
      html.slice(value.start, value.end),
      `{{/${URL_GUARD_HELPER}}}`,
    );
    at = value.end;
  }
  out.push(html.slice(at));
  return { html: out.join(""), guarded: values.length, problems };
}

/** Tokenizes `text` (offset `base` in the document) and collects the values to guard, in order. Conditional comments (`<!--[if mso]>…`) are read as HTML too: Outlook does. */
function tokenizeAttributes(text: string, base: number, spans: readonly Span[], values: GuardedValue[], problems: TemplateProblem[], source: string): void {
  let name = "";
  let nameStart = 0;
  let nameEnd = 0;
  let valueStart = -1;
  let valueEnd = -1;
  const comments: Array<[number, number]> = [];
  const tokenizer = new Tokenizer(
    { decodeEntities: false },
    {
      onattribname(start, end) {
        name = text.slice(start, end).toLowerCase();
        nameStart = base + start;
        nameEnd = base + end;
        valueStart = -1;
        valueEnd = -1;
      },
      onattribdata(start, end) {
        if (valueStart === -1) valueStart = base + start;
        valueEnd = base + end;
      },
      onattribend() {
        if (valueStart === -1 || !overlaps(spans, valueStart, valueEnd)) return;
        const dynamicName = overlaps(spans, nameStart, nameEnd);
        const kind = dynamicName || URL_ATTRIBUTES.has(name) ? (name === "srcset" ? "srcset" : "url") : name.startsWith("on") || name === "srcdoc" ? "script" : undefined;
        if (!kind) return;
        if (!balanced(spans, valueStart, valueEnd)) {
          problems.push({
            line: lineOf(source, valueStart),
            message: `the {{#if}}/{{#unless}}/{{#each}} blocks in the value of ${name} must open and close within it (its value is checked as a whole)`,
          });
          return;
        }
        values.push({
          start: valueStart,
          end: valueEnd,
          replacement: kind === "script" ? "" : name === "href" && !dynamicName ? UNSAFE_LINK : UNSAFE_RESOURCE,
          attribute: kind,
        });
      },
      oncomment(start, end) {
        if (text.startsWith("[if", start)) comments.push([start, end]);
      },
      onattribentity() {},
      oncdata() {},
      onclosetag() {},
      ondeclaration() {},
      onend() {},
      onopentagend() {},
      onopentagname() {},
      onprocessinginstruction() {},
      onselfclosingtag() {},
      ontext() {},
      ontextentity() {},
    },
  );
  tokenizer.write(text);
  tokenizer.end();
  // Values inside a conditional comment come after those before it and before those after it.
  for (const [start, end] of comments) {
    const inner: GuardedValue[] = [];
    tokenizeAttributes(text.slice(start, end), base + start, spans, inner, problems, source);
    if (inner.length === 0) continue;
    const at = values.findIndex((v) => v.start > base + start);
    values.splice(at === -1 ? values.length : at, 0, ...inner);
  }
}

/** Whether a placeholder lies (partly) within `[start, end)`; spans are sorted. */
function overlaps(spans: readonly Span[], start: number, end: number): boolean {
  const i = firstEndingAfter(spans, start);
  return i < spans.length && spans[i]!.start < end;
}

/** Whether the blocks opened within `[start, end)` close there, and none closes there that opened before. */
function balanced(spans: readonly Span[], start: number, end: number): boolean {
  let depth = 0;
  for (let i = firstEndingAfter(spans, start); i < spans.length && spans[i]!.start < end; i++) {
    const kind = spans[i]!.kind;
    if (kind === "open") depth++;
    else if (kind === "close" && --depth < 0) return false;
    else if ((kind === "chain" || kind === "else") && depth === 0) return false;
  }
  return depth === 0;
}

/** Index of the first span ending after `at` (binary search). */
function firstEndingAfter(spans: readonly Span[], at: number): number {
  let lo = 0;
  let hi = spans.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (spans[mid]!.end <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lineOf(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf("\n"); i !== -1 && i < index; i = source.indexOf("\n", i + 1)) line++;
  return line;
}
