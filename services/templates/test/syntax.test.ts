import { checkStructure, compileMjml } from "../src/domain/mjml.js";
import { deriveSlug, firstFreeSlug } from "../src/domain/template.js";

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
