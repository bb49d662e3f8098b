import { analyzeTemplate } from "../src/syntax.js";

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
