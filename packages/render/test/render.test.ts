import { RendererCache } from "../src/cache.js";
import { RENDER_LIMITS, TEMPLATE_LIMITS } from "../src/limits.js";
import { compileRenderer, joinParts, mergeVariables, readsVariable, RenderLimitError, sanitizeSubject, TemplateRejectedError } from "../src/renderer.js";
import { htmlToText } from "../src/text.js";

const html = (body: string) => `<!doctype html><html><head><title>{{title}}</title></head><body><div>${body}</div></body></html>`;

describe("render", () => {
  it("HTML-escapes variables in the body and leaves the subject unescaped on one line", () => {
    const render = compileRenderer({ subject: "Hi {{name}} & welcome", html: html('<p>Hi {{name}}</p><a href="{{url}}">x</a>') });
    const out = render({ name: `<img src=x onerror="alert(1)">\r\nBcc: a@b.c`, url: "https://e.x/?q='x'" });
    expect(out.html).toContain("Hi &lt;img src&#x3D;x onerror&#x3D;&quot;alert(1)&quot;&gt;\r\nBcc: a@b.c");
    expect(out.html).toContain('href="https://e.x/?q&#x3D;&#x27;x&#x27;"');
    expect(out.subject).toBe(`Hi <img src=x onerror="alert(1)"> Bcc: a@b.c & welcome`);
    expect(sanitizeSubject("a\u0000b\tc\u2028d")).toBe("a b c\u2028d");
  });

  it("merges built-ins under the caller's variables, the caller winning key by key", () => {
    const render = compileRenderer({
      subject: "{{email}}",
      html: html("{{email}}|{{metadata.plan}}|{{metadata.seats}}|{{metadata.coupon}}|{{unsubscribe_url}}|{{preference_center_url}}"),
    });
    const builtins = { email: "sub@example.com", metadata: { plan: "pro", seats: 3 }, unsubscribe_url: "https://u.example/x" };
    const own = render({}, builtins);
    expect(own.html).toContain("sub@example.com|pro|3||https://u.example/x|");
    expect(own.subject).toBe("sub@example.com");
    expect(own.missing).toEqual(["metadata.coupon", "preference_center_url", "title"]);

    const overridden = render({ email: "caller@example.com", metadata: { plan: "team", coupon: "X1" } }, builtins);
    expect(overridden.html).toContain("caller@example.com|team|3|X1|https://u.example/x|");
    expect(overridden.missing).toEqual(["preference_center_url", "title"]);
    // A non-object from the caller replaces the built-in object whole.
    expect(mergeVariables({ metadata: { a: 1 } }, { metadata: "none" })).toEqual({ metadata: "none" });
  });

  it("renders missing variables empty and lists them (null counts as missing; empty string does not)", () => {
    const render = compileRenderer({ subject: "{{a}}", html: html("[{{b}}][{{c.d}}][{{e}}]{{#if f}}F{{/if}}{{#each list}}{{this}}{{/each}}") });
    const out = render({ b: null, c: { d: "" }, list: ["x", "y"] });
    expect(out.html).toContain("[][][]xy");
    expect(out.missing).toEqual(["a", "b", "e", "f", "title"]);
  });

  it("never runs helpers other than if/unless/each: a helper's name is a plain variable", () => {
    const render = compileRenderer({ subject: "{{log}}", html: html("{{lookup}}|{{with}}|{{helperMissing}}") });
    const out = render({ log: "L", lookup: "K", with: "W" });
    expect(out.subject).toBe("L");
    expect(out.html).toContain("K|W|");
    expect(out.missing).toEqual(["helperMissing", "title"]);
  });

  it("derives a text part from the rendered HTML, with link targets and without the hidden preview", () => {
    const render = compileRenderer({
      subject: "s",
      html: html(
        '<div style="display:none;font-size:1px;">Preview {{name}}</div><h1>Hello {{name}}</h1><p>Read <a href="{{url}}">the news</a>.</p><img src="x.png" alt="logo"><p>Bye</p>',
      ),
    });
    const out = render({ name: "Ada & Co", url: "https://example.com/n?a=1&b=2" });
    expect(out.text).toBe("HELLO ADA & CO\n\nRead the news [https://example.com/n?a=1&b=2].\n\nBye");
    expect(htmlToText("<p>a</p><p>b</p>")).toBe("a\n\nb");
  });

  it("keeps the built-in each semantics: @index, @first, @last, @key, block params, else", () => {
    const render = compileRenderer({
      subject: "{{#each tags}}{{this}}{{#unless @last}}, {{/unless}}{{/each}}",
      html: html("{{#each items as |it i|}}[{{i}}:{{it.n}}{{#if @first}}F{{/if}}{{#if @last}}L{{/if}}]{{/each}}{{#each obj}}{{@key}}={{this}};{{/each}}{{#each none}}x{{else}}empty{{/each}}"),
    });
    const out = render({ tags: ["a", "b"], items: [{ n: "x" }, { n: "y" }, { n: "z" }], obj: { k1: 1, k2: 2 } });
    expect(out.subject).toBe("a, b");
    expect(out.html).toContain("[0:xF][1:y][2:zL]k1=1;k2=2;empty");
  });

  it("bounds what {{#each}} may render per message", () => {
    const nested = compileRenderer({ subject: "s", html: html("{{#each a}}{{#each @root.a}}{{#each @root.a}}.{{/each}}{{/each}}{{/each}}") });
    const list = Array.from({ length: 100 }, (_, i) => i);
    expect(() => nested({ a: list })).toThrow(new RenderLimitError("eachIterations"));
    const fine = nested({ a: list.slice(0, 20) }); // 20 + 400 + 8000 iterations
    expect(fine.html).toContain(".".repeat(8000));
    expect(RENDER_LIMITS.eachIterations).toBe(10_000);
    // The budget is per message, not per renderer.
    expect(nested({ a: list.slice(0, 20) }).html).toBe(fine.html);
  });

  it("bounds the size of a message: each blocks stop as soon as they pass it, and so does escaping", () => {
    const wide = compileRenderer({ subject: "s", html: html("{{#each rows}}{{this}}{{/each}}") });
    const big = "x".repeat(60 * 1024);
    expect(() => wide({ rows: Array.from({ length: 20 }, () => big) })).toThrow(new RenderLimitError("outputChars"));
    // Nested each blocks count every character once: 8 × 8 × 8 KiB stays under 512 KiB.
    const nested = compileRenderer({ subject: "s", html: html("{{#each a}}{{#each this}}{{#each this}}{{this}}{{/each}}{{/each}}{{/each}}") });
    const cube = (n: number, leaf: string) => Array.from({ length: n }, () => Array.from({ length: n }, () => Array.from({ length: n }, () => leaf)));
    expect(nested({ a: cube(8, "y".repeat(1000)) }).html.length).toBeGreaterThan(500_000);
    expect(() => nested({ a: cube(8, "y".repeat(1100)) })).toThrow(new RenderLimitError("outputChars"));
    // A thousand {{x}} of a 60 KiB value: escaping stops at the budget, without any each.
    const flat = compileRenderer({ subject: "s", html: html("{{x}}".repeat(TEMPLATE_LIMITS.expressions - 1)) });
    expect(() => flat({ x: "<".repeat(60 * 1024) })).toThrow(new RenderLimitError("outputChars"));
    // The subject counts too, and is measured before it is made one line.
    const subject = compileRenderer({ subject: "{{{x}}}{{{x}}}{{{x}}}{{{x}}}{{{x}}}{{{x}}}{{{x}}}{{{x}}}{{{x}}}", html: html("") });
    expect(() => subject({ x: big })).toThrow(new RenderLimitError("outputChars"));
  });

  it("bounds the work of a message, empty output included", () => {
    const busy = compileRenderer({ subject: "s", html: html(`{{#each items}}${"{{x}}".repeat(99)}{{/each}}`) });
    const items = (n: number) => Array.from({ length: n }, (_, i) => i);
    expect(busy({ items: items(900) }).missing).toEqual(["title"]); // 900 × (1 + 99) < 100,000
    expect(() => busy({ items: items(1100) })).toThrow(new RenderLimitError("evaluations"));
    const ifs = compileRenderer({ subject: `{{#each items}}${"{{#if ../x}}{{/if}}".repeat(20)}{{/each}}`, html: html("") });
    expect(() => ifs({ items: items(9000) })).toThrow(new RenderLimitError("evaluations"));
  });

  it("refuses a rendered message nested deeper than html-to-text may walk", () => {
    const unclosed = compileRenderer({ subject: "s", html: html("{{#each items}}<div>{{this}}{{/each}}") });
    expect(unclosed({ items: Array.from({ length: 100 }, (_, i) => i) }).text).toContain("99");
    expect(() => unclosed({ items: Array.from({ length: 3000 }, (_, i) => i) })).toThrow(new RenderLimitError("markupDepth"));
  });

  it("rejects a version beyond the limits before Handlebars sees it, naming the part, the line and the limit", () => {
    const deep = "{{#if x}}".repeat(3000) + "x" + "{{/if}}".repeat(3000);
    let rejected: unknown;
    try {
      compileRenderer({ subject: "ok", html: `<p>\n\n${deep}</p>` });
    } catch (err) {
      rejected = err;
    }
    expect(rejected).toBeInstanceOf(TemplateRejectedError);
    const error = rejected as TemplateRejectedError;
    expect(error.overLimits).toBe(true);
    expect(error.problems).toEqual([
      { part: "html", line: 3, limit: "blockDepth", message: expect.stringContaining(`blocks nested 3,000 deep; at most ${TEMPLATE_LIMITS.blockDepth}`) },
      { part: "html", line: 3, limit: "expressions", message: expect.stringContaining("more than 1,000 {{…}} expressions") },
    ]);
    expect(error.message).toMatch(/^the template cannot be rendered: html line 3: blocks nested 3,000 deep/);
    expect(() => compileRenderer({ subject: "{{#if a}}".repeat(40) + "{{/if}}".repeat(40), html: "<p></p>" })).toThrow(TemplateRejectedError);
    expect(() => compileRenderer({ subject: "s", html: "<div>".repeat(300) })).toThrow(/elements nested 300 deep; at most 256/);
    expect(() => compileRenderer({ subject: "s", html: "x".repeat(TEMPLATE_LIMITS.htmlChars + 1) })).toThrow(/characters of HTML; at most 524,288/);
    // What does not compile is rejected too (a version stored before the checks).
    expect(() => compileRenderer({ subject: "s", html: "{{#if a}}" })).toThrow(TemplateRejectedError);
  });

  it("names the top-level variables a version reads, however deep in its blocks, so a caller can skip a built-in nobody shows", () => {
    const reads = (body: string, subject = "s") => readsVariable(compileRenderer({ subject, html: html(body) }).variables, "preference_center_url");
    expect(reads("<p>{{name}}</p>")).toBe(false);
    expect(reads("<p>{{preference_center_url}}</p>")).toBe(true);
    expect(reads("<p>x</p>", "{{preference_center_url}}")).toBe(true);
    expect(reads("{{#each items}}<a href=\"{{../preference_center_url}}\">x</a>{{/each}}")).toBe(true);
    expect(reads("{{#each items}}{{#each this.rows}}{{@root.preference_center_url}}{{/each}}{{/each}}")).toBe(true);
    expect(reads("{{#if preference_center_url}}<a>y</a>{{/if}}")).toBe(true);
    // An item's own field of that name is the item's, not the built-in.
    expect(reads("{{#each items}}{{preference_center_url}}{{/each}}")).toBe(false);
    expect(readsVariable(["preference_center_url_old"], "preference_center_url")).toBe(false);
  });

  it("takes the variable list from the compiled version when given", () => {
    const render = compileRenderer({ subject: "{{a}}", html: html("{{b}}"), variables: ["a", "b", "zz"] });
    expect(render({ a: 1, b: 2 }).missing).toEqual(["zz"]);
  });

  it("caches compiled versions per key with LRU eviction, bounded by entries and size", () => {
    let compiles = 0;
    const counting = (c: Parameters<typeof compileRenderer>[0]) => {
      compiles++;
      return compileRenderer(c);
    };
    const cache = new RendererCache<number>({ maxEntries: 2, compile: counting });
    const v = (n: number) => ({ subject: `v${n}`, html: `<p>${n}</p>` });
    const r1 = cache.prepare("t:v1", v(1), 1);
    expect(cache.prepare("t:v1", v(1), 1)).toBe(r1);
    expect(r1.renderer!().subject).toBe("v1");
    cache.prepare("t:v2", v(2), 2);
    cache.get("t:v1"); // v1 is now the most recently used
    cache.prepare("t:v3", v(3), 3); // evicts v2
    expect(cache.size).toBe(2);
    expect(cache.get("t:v2")).toBeUndefined();
    expect(cache.get("t:v1")).toBe(r1);
    expect(cache.get("t:v1")!.value).toBe(1);
    expect(compiles).toBe(3);
    expect(() => new RendererCache({ maxEntries: 0 })).toThrow(RangeError);

    // Bounded by size too: a large template pushes older ones out, but stays itself.
    const small = new RendererCache({ maxEntries: 10, maxChars: 100 });
    small.prepare("a", { subject: "a", html: "x".repeat(40) }, undefined);
    small.prepare("b", { subject: "b", html: "x".repeat(40) }, undefined);
    expect(small.size).toBe(2);
    small.prepare("big", { subject: "c", html: "x".repeat(150) }, undefined);
    expect([small.get("a"), small.get("b")]).toEqual([undefined, undefined]);
    expect(small.get("big")).toBeDefined();
  });

  it("remembers a version that cannot be rendered, so it is checked once", () => {
    let compiles = 0;
    const cache = new RendererCache<string>({
      compile: (c) => {
        compiles++;
        return compileRenderer(c);
      },
    });
    const deep = { subject: "s", html: "{{#each x}}".repeat(3000) + "{{/each}}".repeat(3000) };
    const first = cache.prepare("tpl:v1", deep, "meta");
    expect(first.renderer).toBeUndefined();
    expect(first.rejected).toBeInstanceOf(TemplateRejectedError);
    expect(cache.prepare("tpl:v1", deep, "meta")).toBe(first);
    expect(compiles).toBe(1);
    // Other errors are not remembered: they are not a property of the version.
    const flaky = new RendererCache({
      compile: () => {
        throw new Error("out of memory");
      },
    });
    expect(() => flaky.prepare("k", deep, undefined)).toThrow("out of memory");
    expect(flaky.size).toBe(0);
  });
  it("gives a body without blocks as its version's fixed text and the message's values, which join to the HTML, the fixed text one array for every message", () => {
    // MJML's undetermined language (filled per message), an escaped value, a URL guard, a comment.
    const body = '<!doctype html><html lang="und"><body><p>Hi {{metadata.name}}</p>{{!-- a note --}}<a href="{{unsubscribe_url}}">Leave</a>\n<p>{{missing}}</p></body></html>';
    const render = compileRenderer({ subject: "Hi", html: body });
    const first = render({}, { metadata: { name: "Ada & <Bob>" }, unsubscribe_url: "https://u.example/x?t=1&y=2" }, { language: "de" });
    const second = render({}, { metadata: { name: "two\nlines" }, unsubscribe_url: "javascript:alert(1)" });
    for (const out of [first, second]) {
      expect(out.htmlParts).toBeDefined();
      expect(joinParts(out.htmlParts!.statics, out.htmlParts!.values)).toBe(out.html);
    }
    expect(first.htmlParts!.values).toEqual(["de", "Ada &amp; &lt;Bob&gt;", "https://u.example/x?t&#x3D;1&amp;y&#x3D;2", ""]);
    // The guard let the unsafe link through as its replacement, one value.
    expect(second.htmlParts!.values).toEqual(["en", "two\nlines", "#", ""]);
    expect(second.htmlParts!.statics).toBe(first.htmlParts!.statics);
  });

  it("gives parts that join to the HTML for any values: strings of every kind, numbers, booleans, null, lists, objects, missing", () => {
    const body = '<html lang="und"><body><p title="x">{{a}}|{{b.c}}|{{this.a}}</p><a href="{{link}}">{{a}}</a><img src="https://i.example/{{b.c}}.png"></body></html>';
    const render = compileRenderer({ subject: "{{a}}", html: body });
    const kinds: unknown[] = ["", "plain", "a&b<c>\"d'e`f=g", "two\nlines\r\n", "caf\u00e9 \u{1F600}", "x".repeat(5000), "javascript:alert(1)", "https://ok.example/?q=1&r=2", 0, 42.5, true, false, null, [1, "two"], { nested: true }];
    let parted = 0;
    for (let i = 0; i < 300; i++) {
      const pick = (k: number) => kinds[(i * 7 + k * 13) % kinds.length];
      const variables: Record<string, unknown> = { a: pick(1), b: i % 5 === 0 ? pick(2) : { c: pick(3) }, link: pick(4) };
      if (i % 11 === 0) delete variables.a;
      const out = render(variables, {}, { language: i % 2 === 0 ? "de" : undefined });
      if (!out.htmlParts) continue;
      parted++;
      expect({ i, html: joinParts(out.htmlParts.statics, out.htmlParts.values) }).toEqual({ i, html: out.html });
    }
    expect(parted).toBe(300);
  });

  it("gives no parts for a body with blocks, whose fixed text differs from message to message", () => {
    const render = compileRenderer({ subject: "Hi", html: html("{{#if vip}}<p>VIP {{name}}</p>{{/if}}<p>{{name}}</p>") });
    expect(render({ vip: true, name: "Ada" }).htmlParts).toBeUndefined();
    expect(render({ vip: false, name: "Ada" }).html).toContain("<p>Ada</p>");
  });
});
