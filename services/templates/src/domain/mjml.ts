/// <reference path="../types/mjml.d.ts" />
import type mjml2html from "mjml";
import type { ComponentClass, MjmlNode, TypeChecker } from "mjml-core";
import type * as MjmlCore from "mjml-core";
import type parseMjml from "mjml-parser-xml";
import type validateMjml from "mjml-validator";
import type * as MjmlValidator from "mjml-validator";

// MJML → HTML, once per template version, with strict validation that names
// lines. Three checks, in order:
//  1. structure: the markup is well formed (MJML's own parser, htmlparser2,
//     silently repairs unclosed and mismatched tags; we do not), has one <mjml>
//     root holding one <mj-body>, no mj-include, no text MJML would drop;
//  2. MJML's validator (unknown tags and attributes, wrong children, bad
//     attribute values), except that an attribute value holding a
//     {{placeholder}} is accepted: `color="{{brand_color}}"` can only be checked
//     once the variable is known, and MJML keeps it intact;
//  3. compiling (validation already done, so `skip`), without minify or
//     beautify, which would have to protect the placeholders.
// Two things of MJML's output are changed for mail, once per version:
//  - fonts: MJML links Google Fonts for any of five families its CSS names
//    (mj-text's default, Ubuntu, is one), so every message would make the
//    reader's client call fonts.googleapis.com (a transfer of their address
//    to a third party, a GDPR problem in the EU). Compiled with no fonts of
//    MJML's own: only an <mj-font> the template declares is linked;
//  - the hidden preview text (mj-preview): MJML hides it white on white as
//    well as with display:none, which SpamAssassin scores as hidden text
//    (HTML_FONT_LOW_CONTRAST). Ours hides it without a colour (and from
//    Outlook with mso-hide:all).
// mjml 5's `templateSyntax` option only protects placeholders during minify and
// beautify; it does not relax the validator, hence the type checker wrapper.

export interface MjmlProblem {
  /** 1-based line in the MJML source; 0 when MJML does not say. */
  line: number;
  message: string;
}

export type MjmlResult = { ok: true; html: string } | { ok: false; problems: MjmlProblem[] };

const MAX_PROBLEMS = 20;
/** How MJML 5 opens the hidden preview text (mjml-core, helpers/preview.js): white on white among the rest. */
const MJML_PREVIEW_OPENING =
  '<div style="display:none;font-size:1px;color:#ffffff;line-height:1px;max-height:0px;max-width:0px;opacity:0;overflow:hidden;">';
/** Ours: hidden alike, without the colour. The text part skips it by its `display:none` (packages/render, text.ts). */
export const PREVIEW_OPENING = '<div style="display:none;font-size:1px;line-height:1px;max-height:0px;max-width:0px;opacity:0;overflow:hidden;mso-hide:all;">';
const PLACEHOLDER = /\{\{[\s\S]*?\}\}/;

/** MJML's parts this file uses, and what it reads from MJML's component registry. */
interface Mjml {
  toHtml: typeof mjml2html;
  parse: typeof parseMjml;
  validate: typeof validateMjml;
  components: Record<string, ComponentClass>;
  dependencies: Record<string, unknown>;
  initializeType: (typeConfig: string) => TypeChecker;
  /** Tags whose content MJML takes as raw HTML (mj-text, mj-button, mj-raw, ...). */
  endingTags: ReadonlySet<string>;
  /** Tags whose text content MJML uses even though it parses their children. */
  textTags: ReadonlySet<string>;
}

let loadedMjml: Mjml | undefined;

/**
 * MJML, loaded at the first compile: with juice, cheerio and undici it is
 * about 600 modules and 15 MB of heap, which a platform at rest, or sending
 * templates compiled before, does not use (bench/README.md, "Memory").
 */
function mjml(): Mjml {
  if (!loadedMjml) {
    /* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use (above) */
    // "mjml" first: loading it registers the preset components in mjml-core's registry, read below.
    const toHtml = require("mjml") as typeof mjml2html;
    const core = require("mjml-core") as typeof MjmlCore;
    const parse = require("mjml-parser-xml") as typeof parseMjml;
    const validator = require("mjml-validator") as typeof MjmlValidator;
    /* eslint-enable @typescript-eslint/no-require-imports */
    const endingTags = new Set(
      Object.values(core.components)
        .filter((c) => c.endingTag)
        .map((c) => c.getTagName()),
    );
    loadedMjml = {
      toHtml,
      parse,
      validate: validator.default,
      components: core.components,
      dependencies: validator.dependencies,
      initializeType: core.initializeType,
      endingTags,
      textTags: new Set([...endingTags, "mj-html-attribute"]),
    };
  }
  return loadedMjml;
}
const ROOT_CHILDREN = new Set(["mj-head", "mj-body", "mj-raw"]);

const tolerantTypes = new Map<string, TypeChecker>();

/** MJML's attribute type checker, accepting any value that holds a {{placeholder}}. */
function placeholderTolerantType(typeConfig: string): TypeChecker {
  let checker = tolerantTypes.get(typeConfig);
  if (!checker) {
    const Base = mjml().initializeType(typeConfig);
    checker = class extends Base {
      override isValid(): boolean {
        return PLACEHOLDER.test(String(this.value)) || super.isValid();
      }
    };
    // MJML's messages name the type by its class name ("for type Color").
    Object.defineProperty(checker, "name", { value: Base.name });
    tolerantTypes.set(typeConfig, checker);
  }
  return checker;
}

export async function compileMjml(source: string): Promise<MjmlResult> {
  const structural = checkStructure(source);
  if (structural.length > 0) return { ok: false, problems: structural };

  const { parse, validate, toHtml, components, dependencies } = mjml();
  let tree: MjmlNode;
  try {
    tree = parse(source, { components, keepComments: true, ignoreIncludes: true, filePath: ".", actualPath: ".", preprocessors: [] });
  } catch (err) {
    return { ok: false, problems: [{ line: 0, message: errorText(err) }] };
  }
  const errors = validate(tree, { components, dependencies, initializeType: placeholderTolerantType });
  if (errors.length > 0) {
    const seen = new Set<string>();
    const problems: MjmlProblem[] = [];
    for (const e of errors) {
      const p = { line: e.line ?? 0, message: `${e.message.trim()} (${e.tagName})` };
      const key = `${p.line}:${p.message}`;
      if (!seen.has(key) && problems.length < MAX_PROBLEMS) problems.push(p);
      seen.add(key);
    }
    return { ok: false, problems };
  }
  try {
    const { html } = await toHtml(tree, {
      validationLevel: "skip",
      minify: false,
      beautify: false,
      keepComments: true,
      ignoreIncludes: true,
      // A fresh object each time: MJML adds the template's <mj-font>s to it.
      fonts: {},
    });
    return { ok: true, html: html.replace(MJML_PREVIEW_OPENING, PREVIEW_OPENING) };
  } catch (err) {
    return { ok: false, problems: [{ line: 0, message: errorText(err) }] };
  }
}

function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0]!.slice(0, 300);
}

interface Open {
  name: string;
  line: number;
  /** Names of the element children seen so far (for the root). */
  children: string[];
}

const TAG_NAME = /[A-Za-z][A-Za-z0-9:_-]*/y;
const ATTRIBUTE = /\s+([^\s=/>"'<]+)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?/y;
const TAG_END = /\s*(\/?)>/y;

/**
 * Checks that the markup is well formed XML as far as MJML elements go (the
 * content of mj-text, mj-button, mj-raw... is HTML and is left to MJML), and
 * returns the problems with their lines.
 */
export function checkStructure(source: string): MjmlProblem[] {
  const problems: MjmlProblem[] = [];
  const lineStarts = [0];
  for (let i = source.indexOf("\n"); i !== -1; i = source.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  const lineAt = (index: number): number => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const add = (index: number, message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ line: lineAt(index), message });
  };

  const stack: Open[] = [];
  let root: Open | undefined;
  let rootClosed = false;
  let pos = 0;

  const text = (from: number, to: number) => {
    const chunk = source.slice(from, to);
    const offset = chunk.search(/\S/);
    if (offset === -1) return;
    const parent = stack[stack.length - 1];
    if (!parent) {
      add(from + offset, root ? "text after </mjml>" : "text before <mjml>");
    } else if (!mjml().textTags.has(parent.name) && mjml().components[parent.name]) {
      add(from + offset, `text directly inside <${parent.name}> is dropped by MJML; put it in an <mj-text> (or <mj-raw> for {{#if}}/{{#each}} around sections)`);
    }
  };

  while (pos < source.length) {
    const lt = source.indexOf("<", pos);
    if (lt === -1) {
      text(pos, source.length);
      break;
    }
    text(pos, lt);
    if (source.startsWith("<!--", lt)) {
      const end = source.indexOf("-->", lt + 4);
      if (end === -1) {
        add(lt, "comment <!-- is never closed with -->");
        return problems;
      }
      pos = end + 3;
      continue;
    }
    if (source.startsWith("<![CDATA[", lt)) {
      const end = source.indexOf("]]>", lt);
      if (end === -1) {
        add(lt, "<![CDATA[ is never closed with ]]>");
        return problems;
      }
      pos = end + 3;
      continue;
    }
    if (source.startsWith("<?", lt)) {
      const end = source.indexOf("?>", lt);
      if (end === -1 || root) add(lt, "unexpected <? ... ?>");
      if (end === -1) return problems;
      pos = end + 2;
      continue;
    }
    const closing = source[lt + 1] === "/";
    TAG_NAME.lastIndex = lt + (closing ? 2 : 1);
    const nameMatch = TAG_NAME.exec(source);
    if (!nameMatch) {
      add(lt, `"<" that does not start a tag; write &lt; in text`);
      pos = lt + 1;
      continue;
    }
    const name = nameMatch[0].toLowerCase();
    let cursor = TAG_NAME.lastIndex;

    if (closing) {
      TAG_END.lastIndex = cursor;
      const end = TAG_END.exec(source);
      if (!end || end[1] === "/") {
        add(lt, `malformed closing tag </${name}`);
        return problems;
      }
      pos = TAG_END.lastIndex;
      const at = findOpen(stack, name);
      if (at === -1) {
        add(lt, `</${name}> has no matching <${name}>`);
        continue;
      }
      for (let i = stack.length - 1; i > at; i--) {
        const unclosed = stack[i]!;
        add(lt, `<${unclosed.name}> opened on line ${unclosed.line} is not closed before </${name}>`);
      }
      stack.length = at;
      if (at === 0) rootClosed = true;
      continue;
    }

    // An opening (or self-closing) tag: attributes, then > or />.
    const seen = new Set<string>();
    for (;;) {
      ATTRIBUTE.lastIndex = cursor;
      const attr = ATTRIBUTE.exec(source);
      if (!attr) break;
      const attrName = attr[1]!;
      if (seen.has(attrName)) add(lt, `attribute ${attrName} is given twice on <${name}>`);
      seen.add(attrName);
      cursor = ATTRIBUTE.lastIndex;
    }
    TAG_END.lastIndex = cursor;
    const end = TAG_END.exec(source);
    if (!end) {
      add(lt, `malformed tag <${name}>: check its attributes and quotes`);
      return problems;
    }
    const selfClosing = end[1] === "/";
    pos = TAG_END.lastIndex;
    const line = lineAt(lt);

    const parent = stack[stack.length - 1];
    if (!parent) {
      if (rootClosed || root) {
        add(lt, `<${name}> after </mjml>: the document has one root`);
        return problems;
      } else if (name !== "mjml") add(lt, `the document must start with <mjml>, not <${name}>`);
    } else {
      parent.children.push(name);
      if (parent === root && !ROOT_CHILDREN.has(name)) add(lt, `<${name}> cannot be a child of <mjml> (only mj-head, mj-body, mj-raw)`);
    }
    if (name === "mj-include") {
      add(lt, "mj-include is not supported: a template holds all of its markup");
      continue;
    }
    if (selfClosing) continue;
    if (mjml().endingTags.has(name)) {
      // Raw content up to the matching closing tag (MJML does not parse it as MJML).
      const close = new RegExp(`</${name}\\s*>`, "ig");
      close.lastIndex = pos;
      const found = close.exec(source);
      if (!found) {
        add(lt, `<${name}> is never closed`);
        return problems;
      }
      pos = close.lastIndex;
      continue;
    }
    const open: Open = { name, line, children: [] };
    if (!parent && !root && name === "mjml") root = open;
    stack.push(open);
  }

  for (let i = stack.length - 1; i >= 0; i--) {
    const unclosed = stack[i]!;
    if (problems.length < MAX_PROBLEMS) problems.push({ line: unclosed.line, message: `<${unclosed.name}> is never closed` });
  }
  if (!root) {
    if (problems.length === 0) problems.push({ line: 1, message: "no <mjml> root element" });
  } else if (problems.length === 0) {
    const bodies = root.children.filter((c) => c === "mj-body").length;
    const heads = root.children.filter((c) => c === "mj-head").length;
    if (bodies !== 1) problems.push({ line: root.line, message: `<mjml> must hold exactly one <mj-body> (found ${bodies})` });
    if (heads > 1) problems.push({ line: root.line, message: `<mjml> may hold one <mj-head> (found ${heads})` });
  }
  return problems;
}

function findOpen(stack: Open[], name: string): number {
  for (let i = stack.length - 1; i >= 0; i--) if (stack[i]!.name === name) return i;
  return -1;
}
