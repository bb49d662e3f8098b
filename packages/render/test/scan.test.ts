import Handlebars from "handlebars";
import { handlebarsBounds, htmlBounds, markupBounds } from "../src/bounds.js";
import { TEMPLATE_LIMITS } from "../src/limits.js";
import { scanHandlebars, scanMarkup } from "../src/scan.js";
import { analyzeTemplate } from "../src/syntax.js";

/** How deep Handlebars itself nests blocks (its AST), for sources it parses. */
function astDepth(source: string): number {
  let max = 0;
  const stack: Array<[hbs.AST.Program | undefined, number]> = [[Handlebars.parse(source), 0]];
  while (stack.length > 0) {
    const [program, depth] = stack.pop()!;
    for (const node of program?.body ?? []) {
      if (node.type !== "BlockStatement") continue;
      const block = node as hbs.AST.BlockStatement;
      max = Math.max(max, depth + 1);
      stack.push([block.program, depth + 1], [block.inverse, depth + 1]);
    }
  }
  return max;
}

const nest = (n: number, open = "{{#if x}}", close = "{{/if}}") => open.repeat(n) + "x" + close.repeat(n);

describe("scanHandlebars", () => {
  it("measures 100,000 nested blocks without recursing, and refuses them without parsing", () => {
    const source = nest(100_000);
    const shape = scanHandlebars(source);
    expect(shape.depth).toEqual({ value: 100_000, line: 1 });
    expect(shape.expressions.value).toBe(200_000);
    // Handlebars.parse would overflow the stack here; analyzeTemplate never calls it.
    expect(analyzeTemplate(source, { allowTripleStash: false })).toEqual({
      variables: [],
      problems: [
        { line: 1, limit: "blockDepth", message: expect.stringContaining("blocks nested 100,000 deep; at most 32") },
        { line: 1, limit: "expressions", message: "more than 1,000 {{…}} expressions (comments do not count)" },
      ],
    });
    // Sub-expressions nest too (Handlebars' AST visitor recurses into them).
    expect(scanHandlebars(`{{a ${"(b ".repeat(100_000)}${")".repeat(100_000)}}}`).depth.value).toBe(100_000);
  });

  it("counts as Handlebars' lexer reads: comments, escapes, strings, segments, chained else", () => {
    const cases: Array<[string, number, number]> = [
      // source, depth, expressions
      ["{{#if a}}{{#each b}}{{c}}{{/each}}{{/if}}", 2, 5],
      ["{{#if a}}{{else if b}}{{else if c}}{{else}}{{/if}}", 3, 5],
      ["{{#if a}}{{^}}{{/if}}{{^b}}{{/b}}", 1, 5],
      ["{{~#if a~}} {{~else if b~}} {{~/if~}}", 2, 3],
      ["{{!-- {{#if a}} --}}{{! {{#if b}} }}{{#if c}}{{/if}}", 1, 2],
      ["{{!-- a }} {{#if b}} --}}{{x}}", 0, 1],
      ["\\{{#if a}}{{#if b}}{{/if}}", 1, 2],
      ["\\\\{{#if a}}{{#if b}}{{/if}}{{/if}}", 2, 4],
      ['{{#if a}}{{x "}} {{/if}}"}}{{#if b}}{{/if}}{{/if}}', 2, 5],
      ["{{#if a}}{{[}}{{/if}}]}}{{#if b}}{{/if}}{{/if}}", 2, 5],
      ["{{elsewhere}}{{#if a}}{{else}}{{/if}}", 1, 4],
    ];
    for (const [source, depth, expressions] of cases) {
      const shape = scanHandlebars(source);
      expect({ source, depth: shape.depth.value, expressions: shape.expressions.value }).toEqual({ source, depth, expressions });
      // Never less than what Handlebars builds.
      expect(shape.depth.value).toBeGreaterThanOrEqual(astDepth(source));
    }
    expect(scanHandlebars("a\n{{{{raw}}}}{{#if}}{{{{/raw}}}}").rawBlockLine).toBe(2);
  });

  it("names the line where a limit is first passed", () => {
    const within = nest(TEMPLATE_LIMITS.blockDepth);
    expect(handlebarsBounds(within)).toEqual([]);
    expect(astDepth(within)).toBe(TEMPLATE_LIMITS.blockDepth);
    const over = "intro\n" + "{{#each a}}\n".repeat(TEMPLATE_LIMITS.blockDepth + 1) + "{{/each}}".repeat(TEMPLATE_LIMITS.blockDepth + 1);
    expect(handlebarsBounds(over)).toEqual([
      { line: TEMPLATE_LIMITS.blockDepth + 2, limit: "blockDepth", message: expect.stringContaining(`blocks nested 33 deep; at most 32`) },
    ]);
    expect(handlebarsBounds("{{x}}\n".repeat(TEMPLATE_LIMITS.expressions))).toEqual([]);
    expect(handlebarsBounds("{{x}}\n".repeat(TEMPLATE_LIMITS.expressions + 1))).toEqual([
      { line: TEMPLATE_LIMITS.expressions + 1, limit: "expressions", message: "more than 1,000 {{…}} expressions (comments do not count)" },
    ]);
    // The line of the first expression beyond the limit, not of the last one.
    expect(scanHandlebars("{{x}}\n".repeat(TEMPLATE_LIMITS.expressions + 10)).expressions).toEqual({ value: 1010, line: 1001 });
    expect(handlebarsBounds(`{{!-- ${"{{x}}".repeat(5000)} --}}`)).toEqual([]);
  });
});

describe("scanMarkup", () => {
  it("measures 100,000 nested elements without recursing", () => {
    const html = "<div>".repeat(100_000) + "x" + "</div>".repeat(100_000);
    expect(scanMarkup(html).depth).toEqual({ value: 100_000, line: 1 });
    expect(markupBounds(html, false)).toEqual([{ line: 1, limit: "markupDepth", message: "elements nested 100,000 deep; at most 256" }]);
  });

  it("builds the tree as htmlparser2 does, as far as depth goes", () => {
    const cases: Array<[string, number]> = [
      ["<table><tr><td><p>a</p></td></tr></table>", 4],
      ["<p>a<p>b<p>c", 1], // an open p is closed by the next
      ["<ul><li>a<li>b<li>c</ul>", 2],
      ["<div><span><b>x</div><div>y</div>", 3], // </div> closes what is open above it
      ["<div></span></b>x</div>", 1], // end tags without a match are ignored
      ["<br><img src=x><hr/><input>", 0],
      ['<div title="a > b" data-x=\'<p>\'>x</div>', 1],
      ["<!-- <div><div> --><div><!--[if mso]><table><tr><td><![endif]--></div>", 1],
      ["<style>div > p { x: '<div>' }</style><script>if (a<b) {}</script><title><b></title>", 1],
      ["<div/><div/><div/>", 3], // HTML ignores the slash
      ["<svg><g/><g/><g><path d=x /></g></svg>", 2], // SVG does not
      ["<DIV><Div>x</div></DIV>", 2],
      ["a < b <3 </ x>", 0],
    ];
    for (const [html, depth] of cases) expect({ html, depth: scanMarkup(html).depth.value }).toEqual({ html, depth });
    // MJML is read as XML: its self-closing tags close.
    const mjml = '<mjml><mj-body><mj-image src="a"/><mj-image src="b" /></mj-body></mjml>';
    expect(scanMarkup(mjml, { selfClosing: true }).depth.value).toBe(2);
    expect(scanMarkup(mjml).depth.value).toBe(4);
  });

  it("names the size limit of compiled HTML", () => {
    expect(htmlBounds("x".repeat(TEMPLATE_LIMITS.htmlChars))).toEqual([]);
    expect(htmlBounds("x".repeat(TEMPLATE_LIMITS.htmlChars + 1))).toEqual([
      { line: 0, limit: "htmlChars", message: "524,289 characters of HTML; at most 524,288" },
    ]);
  });
});
