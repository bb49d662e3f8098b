import { checkStructure, compileMjml } from "../src/domain/mjml.js";
import { deriveSlug, firstFreeSlug } from "../src/domain/template.js";
import { analyzeTemplate } from "../src/domain/template-syntax.js";

describe("template syntax", () => {
  it("lists top-level variables from the AST, scoped by each blocks", () => {
    const { variables, problems } = analyzeTemplate(
      [
        "{{ name }} {{metadata.plan}} {{name}} {{!-- {{ignored}} --}} \\{{literal}}",
        "{{#each orders}}{{id}} {{this.total}} {{../currency}} {{@root.shop}} {{@index}}{{else}}{{empty_note}}{{/each}}",
        "{{#each rows as |row|}}{{row.cell}} {{#each row.cells}}{{../../deep}}{{/each}}{{/each}}",
        "{{#if vip}}{{#unless paid}}{{due}}{{/unless}}{{else if trial}}{{trial_end}}{{/if}}",
      ].join("\n"),
      { allowTripleStash: false },
    );
    expect(problems).toEqual([]);
    expect(variables).toEqual(["currency", "deep", "due", "empty_note", "metadata.plan", "name", "orders", "paid", "rows", "shop", "trial", "trial_end", "vip"]);
  });

  it("reports what is not allowed with its line", () => {
    const { problems } = analyzeTemplate(
      ["ok {{x}}", "{{{raw}}}", "{{#each items}}{{#with x}}{{/with}}{{/each}}", "{{@foo}} {{a-b}} {{this}}", '{{"str"}} {{#if}}{{/if}}'].join("\n"),
      { allowTripleStash: false },
    );
    expect(problems).toEqual([
      { line: 2, message: "{{{raw}}} writes unescaped HTML and is not allowed; use {{raw}}" },
      { line: 3, message: 'block "{{#with}}" is not supported: only {{#if}}, {{#unless}} and {{#each}}' },
      { line: 4, message: '"@foo" is not supported (only @index, @key, @first, @last and @root.<name>)' },
      { line: 4, message: '"a-b" is not a valid variable name (letters, digits, _ and dots)' },
      { line: 4, message: '"this" outside {{#each}} renders the whole variable set' },
      { line: 5, message: "a mustache must name a variable, not a string" },
      { line: 5, message: "{{#if}} takes exactly one variable" },
    ]);
    expect(analyzeTemplate("{{{x}}}", { allowTripleStash: true }).problems).toEqual([]);
    expect(analyzeTemplate("{{../x}} {{#each a}}{{../../y}}{{/each}}", { allowTripleStash: false }).problems).toEqual([
      { line: 1, message: '"../x" climbs out of the template: there are only 0 enclosing {{#each}} blocks' },
      { line: 1, message: '"../../y" climbs out of the template: there are only 1 enclosing {{#each}} blocks' },
    ]);
    expect(analyzeTemplate("{{constructor}} {{a.__proto__}} {{@root.toString}}", { allowTripleStash: false })).toEqual({
      variables: [],
      problems: [
        { line: 1, message: '"constructor": constructor is a reserved name' },
        { line: 1, message: '"a.__proto__": __proto__ is a reserved name' },
        { line: 1, message: '"@root.toString" is not a valid variable name' },
      ],
    });
    expect(analyzeTemplate("a\n{{#if x}}\n{{/each}}", { allowTripleStash: false }).problems).toEqual([{ line: 2, message: "if doesn't match each" }]);
    expect(analyzeTemplate("a\n\n{{x}", { allowTripleStash: false }).problems).toEqual([{ line: 3, message: "syntax error: unexpected INVALID" }]);
  });
});

describe("MJML structure", () => {
  it("names the line of malformed markup that MJML's parser would silently repair", () => {
    expect(checkStructure("<mjml>\n<mj-body>\n<mj-section>\n</mj-body>\n</mjml>")).toEqual([
      { line: 4, message: "<mj-section> opened on line 3 is not closed before </mj-body>" },
    ]);
    expect(checkStructure("<mjml>\n<mj-body>\n</mj-section>\n</mj-body>\n</mjml>")).toEqual([{ line: 3, message: "</mj-section> has no matching <mj-section>" }]);
    expect(checkStructure("<mjml>\n<mj-body>\n<mj-text>hi\n</mj-body>\n</mjml>")).toEqual([{ line: 3, message: "<mj-text> is never closed" }]);
    expect(checkStructure('<mjml>\n<mj-body>\n<mj-section padding="1px>\n</mj-section></mj-body></mjml>')).toEqual([
      { line: 3, message: "malformed tag <mj-section>: check its attributes and quotes" },
    ]);
    expect(checkStructure("<mjml>\n<mj-body>\n</mj-body>")).toEqual([{ line: 1, message: "<mjml> is never closed" }]);
    expect(checkStructure("<mjml><mj-head></mj-head></mjml>")).toEqual([{ line: 1, message: "<mjml> must hold exactly one <mj-body> (found 0)" }]);
    expect(checkStructure("<mjml><mj-body>\n<mj-section>{{#each x}}<mj-column></mj-column>{{/each}}</mj-section></mj-body></mjml>")[0]!.message).toMatch(
      /^text directly inside <mj-section> is dropped by MJML/,
    );
    expect(checkStructure('<mjml><mj-body a="1" a="2"></mj-body></mjml>')).toEqual([{ line: 1, message: "attribute a is given twice on <mj-body>" }]);
    expect(checkStructure("<!-- c --><mjml><mj-body><mj-raw><p>a < b<br></mj-raw></mj-body></mjml>")).toEqual([]);
  });

  it("accepts a placeholder where MJML expects a typed value, and still rejects a bad literal", async () => {
    const doc = (attrs: string) => `<mjml><mj-body><mj-section><mj-column><mj-text ${attrs}>x</mj-text></mj-column></mj-section></mj-body></mjml>`;
    const ok = await compileMjml(doc('color="{{brand_color}}" font-size="{{size}}px" padding="{{pad}}"'));
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(ok.html).toContain("color:{{brand_color}}");
    const bad = await compileMjml(doc('color="nocolour"'));
    expect(bad).toEqual({ ok: false, problems: [{ line: 1, message: "Attribute color has invalid value: nocolour for type Color (mj-text)" }] });
  });
});

describe("slugs", () => {
  it("derives lower-case ascii dashed slugs and the first free suffix", () => {
    expect(deriveSlug("Welcome Email")).toBe("welcome-email");
    expect(deriveSlug("  Straße -- Été ")).toBe("strasse-ete");
    expect(deriveSlug("日本語")).toBe("template");
    expect(deriveSlug("x".repeat(300))).toHaveLength(90);
    expect(firstFreeSlug("a", [])).toBe("a");
    expect(firstFreeSlug("a", ["a"])).toBe("a-2");
    expect(firstFreeSlug("a", ["a", "a-2", "a-4", "a-news", "a-1"])).toBe("a-3");
    expect(firstFreeSlug("a", ["a-2"])).toBe("a");
  });
});
