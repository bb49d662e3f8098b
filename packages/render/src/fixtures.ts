import { RENDER_LIMITS, TEMPLATE_LIMITS } from "./limits.js";

// The heaviest template TEMPLATE_LIMITS let through, for the benchmark and the
// tests that measure or exercise rendering at the limits (built from the
// limits, so it follows them when they change).

/** A layout row as MJML writes them: a table cell holding styled text. */
const ROW =
  '<tr><td style="padding:10px 25px;word-break:break-word;" align="left"><div style="font-family:Helvetica,Arial,sans-serif;font-size:14px;line-height:1.5;color:#333333;">Lorem ipsum dolor sit amet, consectetur adipiscing elit.</div></td></tr>\n';

export interface AtLimits {
  subject: string;
  /** An HTML fragment (no <html> or <body>): put it in a document, or in an <mj-raw>. */
  fragment: string;
  /** Variables that render it to nearly RENDER_LIMITS.outputChars. */
  variables: Record<string, unknown>;
}

/**
 * Blocks nested `blockDepth` deep around an `{{#each}}` holding the rest of the
 * `expressions`, all inside elements nested to `markupDepth` less `reserve`
 * (for the document and MJML around it), and layout rows up to `chars` in all.
 */
export function templateAtLimits(options: { chars?: number; reserve?: number } = {}): AtLimits {
  const depth = TEMPLATE_LIMITS.blockDepth;
  const elements = TEMPLATE_LIMITS.markupDepth - (options.reserve ?? 12);
  const expressions = TEMPLATE_LIMITS.expressions - 2 * depth - 1; // the blocks' open and close, the subject's one
  const mustaches = Array.from({ length: expressions }, (_, i) => `<span>{{../v${i % 50}}}</span>`).join("");
  const core = "{{#if on}}".repeat(depth - 1) + "{{#each items}}" + mustaches + "{{/each}}" + "{{/if}}".repeat(depth - 1);
  const nested = "<div>".repeat(elements) + core + "</div>".repeat(elements);
  // Room for what the variables add (about 40 characters a mustache), within the output budget.
  const chars = options.chars ?? Math.min(TEMPLATE_LIMITS.htmlChars, RENDER_LIMITS.outputChars) - 48 * expressions;
  const rows = Math.max(0, Math.floor((chars - nested.length - 20) / ROW.length));
  const variables: Record<string, unknown> = { on: true, items: [1], name: "Ada" };
  for (let i = 0; i < 50; i++) variables[`v${i}`] = `value ${i} & <more> ${"x".repeat(20)}`;
  return { subject: "Hello {{name}}", fragment: `<table>${ROW.repeat(rows)}</table>${nested}`, variables };
}
