import { compileRenderer, TemplateRejectedError } from "../src/renderer.js";
import { languageSlot } from "../src/language.js";
import { htmlToText } from "../src/text.js";
import { guardUrlAttributes, isSafeUrl } from "../src/urls.js";

// Values in URL attributes (issue 16, defect 11c): a variable used as
// href="{{url}}" must never make a link that runs script, whatever its
// spelling; the rest of the message is rendered as before.

const html = (body: string) => `<!doctype html><html lang="und"><head><title>t</title></head><body><div>${body}</div></body></html>`;
const hrefOf = (out: string) => /<a href="([^"]*)"/.exec(out)?.[1];

const UNSAFE = [
  "javascript:alert(1)",
  "JaVaScRiPt:alert(1)",
  " javascript:alert(1)",
  "\tjavascript:alert(1)",
  "\u0001javascript:alert(1)",
  "java\nscript:alert(1)",
  "java\tscript:alert(1)",
  "javascript&colon;alert(1)",
  "&#106;avascript:alert(1)",
  "&#x6A;avascript:alert(1)",
  "javascript&#58;alert(1)",
  "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
  "vbscript:msgbox(1)",
  "file:///etc/passwd",
  "jar:https://e.x/!/",
];
const SAFE = [
  ["https://example.com/a?b=1&c=2", "https://example.com/a?b&#x3D;1&amp;c&#x3D;2"],
  ["HTTP://EXAMPLE.COM/", "HTTP://EXAMPLE.COM/"],
  ["mailto:ada@example.com", "mailto:ada@example.com"],
  ["tel:+41 44 000 00 00", "tel:+41 44 000 00 00"],
  ["/relative/path:with-colon", "/relative/path:with-colon"],
  ["page.html", "page.html"],
  ["?q=1", "?q&#x3D;1"],
  ["#top", "#top"],
  ["//cdn.example.com/x.png", "//cdn.example.com/x.png"],
  ["", ""],
] as const;

describe("URL attribute values", () => {
  it("replaces a value that is not http(s), mailto, tel or relative, in every spelling, with # in a link", () => {
    const render = compileRenderer({ subject: "s", html: html('<a href="{{url}}">Go</a>') });
    for (const url of UNSAFE) {
      const out = render({ url });
      expect({ url, href: hrefOf(out.html) }).toEqual({ url, href: "#" });
      expect(out.text).toBe("Go");
    }
    for (const [url, href] of SAFE) expect(hrefOf(render({ url }).html)).toBe(href);
  });

  it("checks the value whole: a placeholder after text that does not fix the scheme, two placeholders, blocks, loops, unquoted", () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['<a href="java{{rest}}">x</a>', { rest: "script:alert(1)" }, "#"],
      ['<a href="{{scheme}}{{rest}}">x</a>', { scheme: "javascript", rest: ":alert(1)" }, "#"],
      ['<a href="{{#if vip}}{{vip}}{{else}}https://e.x/{{/if}}">x</a>', { vip: "javascript:alert(1)" }, "#"],
      ['<a href="{{#if vip}}{{vip}}{{else}}https://e.x/{{/if}}">x</a>', {}, "https://e.x/"],
      ['<a href="https://e.x/{{path}}">x</a>', { path: "javascript:alert(1)" }, "https://e.x/javascript:alert(1)"],
      ["{{#each links}}<a href=\"{{this}}\">x</a>{{/each}}", { links: ["javascript:alert(1)"] }, "#"],
      ["<a href={{url}}>x</a>", { url: "javascript:alert(1)" }, "#"],
    ];
    for (const [body, variables, href] of cases) {
      const out = compileRenderer({ subject: "s", html: html(body) })(variables).html;
      expect({ body, href: /<a href="?([^" >]*)/.exec(out)?.[1] }).toEqual({ body, href });
    }
  });

  it("guards what is loaded too (about:blank), srcset candidates, attributes named by a placeholder, and Outlook's conditional HTML", () => {
    const render = compileRenderer({
      subject: "s",
      html: html(
        '<img src="{{img}}" srcset="https://e.x/a.png 1x, {{img}} 2x"><form action="{{img}}"></form><a {{attr}}="{{img}}">x</a>' +
          '<!--[if mso]><v:image src="{{img}}" /><a href="{{img}}">o</a><![endif]-->',
      ),
    });
    const out = render({ img: "javascript:alert(1)", attr: "href" }).html;
    expect(out).not.toContain("javascript:");
    expect(out).toContain('<img src="about:blank" srcset="about:blank">');
    expect(out).toContain('<form action="about:blank">');
    expect(out).toContain('<a href="about:blank">x</a>');
    expect(out).toContain('<v:image src="about:blank" /><a href="#">o</a>');
    const fine = render({ img: "https://e.x/b.png", attr: "href" }).html;
    expect(fine).toContain('<img src="https://e.x/b.png" srcset="https://e.x/a.png 1x, https://e.x/b.png 2x">');
  });

  it("renders an event handler or an iframe's srcdoc that holds a placeholder empty, and leaves attributes without placeholders alone", () => {
    const render = compileRenderer({ subject: "s", html: html('<a href="javascript:void(0)" onclick="track(\'{{id}}\')" title="{{id}}">x</a><iframe srcdoc="<p>{{id}}</p>"></iframe>') });
    const out = render({ id: "');alert(1);('<script>alert(2)</script>" }).html;
    expect(out).toContain('<a href="javascript:void(0)" onclick="" title="&#x27;);alert(1);(&#x27;&lt;script&gt;alert(2)&lt;/script&gt;">x</a><iframe srcdoc=""></iframe>');
  });

  it("refuses a version whose block opens in a URL attribute and closes outside it, naming the line", () => {
    const source = html('\n<a href="{{#if a}}https://e.x/">x</a>{{/if}}');
    expect(guardUrlAttributes(source).problems).toEqual([{ line: 2, message: expect.stringContaining("href") }]);
    expect(() => compileRenderer({ subject: "s", html: source })).toThrow(TemplateRejectedError);
  });

  it("keeps the text part as the HTML reads, on the compiled path and per message", () => {
    const compiled = compileRenderer({ subject: "s", html: html('<p>Hi {{name}}, <a href="{{url}}">read</a> · <a href="{{self}}">{{self}}</a></p>') });
    for (const url of [...UNSAFE, ...SAFE.map(([u]) => u), "mailto:a@b.c", "#x"]) {
      // A link whose text is its own href differs for mailto: and spaces (compileTextTemplate says so).
      const out = compiled({ name: "Ada", url, self: url.replace(/^mailto:/, "").replace(/\s/g, "") });
      expect({ url, text: out.text }).toEqual({ url, text: htmlToText(out.html) });
    }
  });

  it("isSafeUrl reads the attribute as it stands in HTML (escaped)", () => {
    expect(isSafeUrl("https://e.x/?a&#x3D;1")).toBe(true);
    expect(isSafeUrl("a&amp;b")).toBe(false); // a relative URL, refused: stricter than needed, never looser
    expect(isSafeUrl("  \n https://e.x/")).toBe(true);
  });
});

describe("the <html> lang", () => {
  it("is the recipient's language when the template declares none, English without one, and the template's own when declared", () => {
    const undetermined = compileRenderer({ subject: "s", html: html("<p>x</p>") });
    expect(undetermined({}).html).toContain('<html lang="en">');
    expect(undetermined({}, {}, { language: "de" }).html).toContain('<html lang="de">');
    expect(undetermined({}, {}, { language: "pt-BR" }).html).toContain('<html lang="pt-BR">');
    expect(undetermined({}, {}, { language: '"><script>' }).html).toContain('<html lang="en">');
    const german = compileRenderer({ subject: "s", html: '<!doctype html><html lang="de" dir="auto"><body><p>Hallo</p></body></html>' });
    expect(german({}, {}, { language: "fr" }).html).toContain('<html lang="de" dir="auto">');
  });

  it("is written as the HTML renders when nothing before the tag is Handlebars, and into the rendered HTML otherwise, with the same output", () => {
    const body = "<p>{{#each items}}{{@index}}:{{this}} {{/each}}{{@root.name}}</p>";
    const slotted = compileRenderer({ subject: "s", html: html(body) });
    const searched = compileRenderer({ subject: "s", html: `{{!-- a comment first --}}${html(body)}` });
    const variables = { items: ["a", "b"], name: "N" };
    for (const language of [undefined, "de", '"><script>']) {
      const one = slotted(variables, {}, language === undefined ? {} : { language });
      const other = searched(variables, {}, language === undefined ? {} : { language });
      expect(one.html).toBe(other.html);
      expect(one.text).toBe(other.text);
      expect(one.html).toContain(`<html lang="${language === "de" ? "de" : "en"}"><head>`);
      expect(one.html).toContain("<p>0:a 1:b N</p>");
    }
    expect(languageSlot(html(body))).toContain('<html lang="{{@emailsvcLanguage}}">');
    expect(languageSlot(`{{!-- a comment first --}}${html(body)}`)).toBeUndefined();
    // A version whose own text reads the placeholder's name gets nothing from it.
    expect(compileRenderer({ subject: "s", html: html("<p>[{{emailsvcLanguage}}]</p>") })({}, {}, { language: "de" }).html).toContain("<p>[]</p>");
  });
});

describe("the text part of tables", () => {
  it("separates cells and rows of a data table, keeps a cell's link whole, and spaces a layout table's cells", () => {
    const long = "https://shop.example.com/products/green-tea-from-the-mountains?utm_source=newsletter&utm_campaign=june";
    const text = htmlToText(
      `<body><table><tr><th>Item</th><th>Price</th></tr><tr><td>Coffee</td><td>4.50</td></tr><tr><td>Tea</td><td><a href="${long}">Buy</a></td></tr></table>` +
        '<table role="presentation"><tr><td>Left</td><td>Right</td></tr></table></body>',
    );
    expect(text).toBe(`Item     Price\nCoffee   4.50\nTea      Buy\n         [${long}]\n\nLeft Right`);
  });
});
