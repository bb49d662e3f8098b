import { TEMPLATE_LIMITS, type TemplateLimit } from "./limits.js";
import { scanHandlebars, scanMarkup } from "./scan.js";

// The bounds of TEMPLATE_LIMITS as problems that name the limit, found by the
// iterative scans (nothing here parses or recurses on the template).

export interface TemplateProblem {
  /** 1-based line in the checked text; 0 when unknown. */
  line: number;
  message: string;
  /** Set when the problem is a limit exceeded (rather than a syntax error). */
  limit?: TemplateLimit;
}

const count = (n: number) => n.toLocaleString("en-US");

/** Limits of a Handlebars source (a subject, an MJML body, compiled HTML): nesting and expressions. */
export function handlebarsBounds(source: string): TemplateProblem[] {
  const shape = scanHandlebars(source);
  const problems: TemplateProblem[] = [];
  if (shape.rawBlockLine > 0) {
    problems.push({ line: shape.rawBlockLine, message: "raw blocks ({{{{name}}}}) are not supported" });
  }
  if (shape.depth.value > TEMPLATE_LIMITS.blockDepth) {
    problems.push({
      line: shape.depth.line,
      message: `blocks nested ${count(shape.depth.value)} deep; at most ${TEMPLATE_LIMITS.blockDepth} ({{#if}}, {{#unless}}, {{#each}} and each {{else if}} in them count one level)`,
      limit: "blockDepth",
    });
  }
  if (shape.expressions.value > TEMPLATE_LIMITS.expressions) {
    problems.push({
      line: shape.expressions.line,
      message: `more than ${count(TEMPLATE_LIMITS.expressions)} {{…}} expressions (comments do not count)`,
      limit: "expressions",
    });
  }
  return problems;
}

/**
 * Limits of HTML (a version's compiled HTML): its size, and its element
 * nesting, which html-to-text walks recursively for every message.
 */
export function htmlBounds(html: string): TemplateProblem[] {
  if (html.length > TEMPLATE_LIMITS.htmlChars) {
    return [{ line: 0, message: `${count(html.length)} characters of HTML; at most ${count(TEMPLATE_LIMITS.htmlChars)}`, limit: "htmlChars" }];
  }
  return markupBounds(html, false);
}

/**
 * Element nesting of markup. `selfClosing`: `<x/>` closes x (MJML, read as XML);
 * otherwise only where an HTML parser honours it (SVG, MathML).
 */
export function markupBounds(markup: string, selfClosing: boolean): TemplateProblem[] {
  const { depth } = scanMarkup(markup, { selfClosing });
  if (depth.value <= TEMPLATE_LIMITS.markupDepth) return [];
  return [{ line: depth.line, message: `elements nested ${count(depth.value)} deep; at most ${TEMPLATE_LIMITS.markupDepth}`, limit: "markupDepth" }];
}
