import { compileRenderer, compileTextTemplate as compileWith, htmlToText } from "@emailsvc/render";
import { compileMjml } from "../src/domain/mjml.js";

// The text part of a message is compiled once per template version when the
// template allows (compileTextTemplate): on MJML as users write it, it must
// read exactly as converting each rendered message would.

const NEWSLETTER = `<mjml><mj-head><mj-preview>News for {{metadata.name}}</mj-preview></mj-head><mj-body>
  <mj-section><mj-column>
    <mj-text font-size="20px">Hello {{metadata.name}}</mj-text>
    <mj-text>Here is what is new this week at {{company}}: a longer paragraph so that html-to-text has to wrap it at its line width, with {{metadata.city}} in the middle of it.</mj-text>
    <mj-button href="{{cta_url}}">Read more</mj-button>
    <mj-text><a href="{{preference_center_url}}">Manage preferences</a> · <a href="{{unsubscribe_url}}">{{unsubscribe_url}}</a></mj-text>
    <mj-text>Your plan: {{metadata.plan}}</mj-text>
    <mj-table><tr><th>Plan</th><th>Price</th></tr><tr><td>Pro</td><td>CHF 49</td></tr></mj-table>
  </mj-column></mj-section>
</mj-body></mjml>`;

/** compileTextTemplate with the HTML rendered by the renderer. */
const compileTextTemplate = (html: string) => {
  const render = compileRenderer({ subject: "", html });
  return compileWith(html, (context) => render(context).html);
};

async function compiled(mjml: string): Promise<string> {
  const result = await compileMjml(mjml);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.html;
}

describe("text part compiled with the template version", () => {
  it("reads as the converted message on MJML output, wrapping included", async () => {
    const html = await compiled(NEWSLETTER);
    expect(compileTextTemplate(html)).toBeDefined();
    const render = compileRenderer({ subject: "News", html });
    for (const variables of [
      { company: "Acme & Co", cta_url: "https://example.com/n?a=1&b=2", metadata: { name: "Ada <b>", city: "Zürich", plan: "pro" } },
      { company: "", cta_url: "", metadata: {} },
      { company: "x\ny", cta_url: "https://e.x/", metadata: { name: 42, city: null, plan: ["a", "b"] } },
      { company: "A very long company name that takes a line of its own and then some more words", cta_url: "https://e.x/" + "p".repeat(120), metadata: { name: "N", city: "Saint-Rémy-de-Provence and its many surroundings", plan: "x" } },
    ]) {
      const out = render(variables, { unsubscribe_url: "https://u.example/u/abc", preference_center_url: "https://p.example/preferences?token=t" });
      expect(out.text).toBe(htmlToText(out.html));
    }
  });

  it("reads as the converted message for random values (seeded): words, punctuation, markup, blanks, empties", async () => {
    const html = await compiled(NEWSLETTER);
    const render = compileRenderer({ subject: "News", html });
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    // URLs the guard refuses (the HTML gets `#`) and ones html-to-text shows its own way (mailto:, #…) among them.
    const atoms = ["a", "Zürich", "&", "<b>", "x".repeat(30), "—", "  ", "\n", "\t", ",", "[x]", "é", "10%", "https://e.x/p?q=1&r=2", "javascript:alert(1)", " JaVaScRiPt:", "mailto:a@b.c", "#top", "tel:+41", "data:x"];
    const words = (spaces: boolean) =>
      Array.from({ length: Math.floor(random() * 12) }, () => pick(atoms))
        .filter((atom) => spaces || !/\s/.test(atom))
        .join(spaces ? pick([" ", "", "  "]) : "");
    for (let i = 0; i < 300; i++) {
      // Hrefs hold no spaces (URLs); text values anything.
      const variables = { company: words(true), cta_url: words(false), metadata: { name: words(true), city: words(true), plan: words(true) } };
      // unsubscribe_url is a link whose text is its own href: a value starting with mailto: reads
      // differently there (compileTextTemplate lists it), so it gets none.
      const out = render(variables, { unsubscribe_url: words(false).replace(/^mailto:/, ""), preference_center_url: words(false) });
      expect(out.text).toBe(htmlToText(out.html));
    }
  });

  it("is left to each message where filling first could read differently", async () => {
    // A placeholder in a heading (upper-cased), in a data table (its column widths follow the values), in
    // an attribute other than href, in a block, or a helper's name.
    expect(compileTextTemplate(await compiled('<mjml><mj-body><mj-section><mj-column><mj-text><h1>Hi {{name}}</h1></mj-text></mj-column></mj-section></mj-body></mjml>'))).toBeUndefined();
    expect(compileTextTemplate(await compiled("<mjml><mj-body><mj-section><mj-column><mj-table><tr><td>Plan</td><td>{{plan}}</td></tr></mj-table></mj-column></mj-section></mj-body></mjml>"))).toBeUndefined();
    expect(compileTextTemplate(await compiled('<mjml><mj-body><mj-section><mj-column><mj-image src="https://e.x/i.png" alt="{{name}}" /></mj-column></mj-section></mj-body></mjml>'))).toBeUndefined();
    expect(compileTextTemplate(await compiled("<mjml><mj-body><mj-section><mj-column><mj-text>{{#if vip}}VIP{{/if}} {{name}}</mj-text></mj-column></mj-section></mj-body></mjml>"))).toBeUndefined();
    expect(compileTextTemplate("<html><body><p>{{lookup}}</p></body></html>")).toBeUndefined();
    // Without placeholders, or with them in plain text and links only, it is compiled; braces the
    // text shows (decoded entities) stay text, as values do.
    expect(compileTextTemplate("<html><body><p>&#123;&#123;x&#125;&#125; {{name}}</p></body></html>")!({ name: "{{y}}" })).toBe("{{x}} {{y}}");
    expect(compileTextTemplate("<html><body><p>Hi</p></body></html>")!({})).toBe("Hi");
    expect(compileTextTemplate('<html><body><p>Hi {{ name }}, <a href="{{url}}">go</a></p></body></html>')!({ name: "A  B", url: "https://e.x/" })).toBe(
      "Hi A B, go [https://e.x/]",
    );
  });
});
