import { compileRenderer, htmlToText, mergeVariables, RENDER_LIMITS, RendererCache, RenderLimitError, sanitizeSubject } from "../src/domain/render.js";

const html = (body: string) => `<!doctype html><html><head><title>{{title}}</title></head><body><div>${body}</div></body></html>`;

describe("render", () => {
  it("HTML-escapes variables in the body and leaves the subject unescaped on one line", () => {
    const render = compileRenderer({ subject: "Hi {{name}} & welcome", html: html('<p>Hi {{name}}</p><a href="{{url}}">x</a>') });
    const out = render({ name: `<img src=x onerror="alert(1)">\r\nBcc: a@b.c`, url: "javascript:'x'" });
    expect(out.html).toContain("Hi &lt;img src&#x3D;x onerror&#x3D;&quot;alert(1)&quot;&gt;\r\nBcc: a@b.c");
    expect(out.html).toContain('href="javascript:&#x27;x&#x27;"');
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

    const wide = compileRenderer({ subject: "s", html: html("{{#each rows}}{{this}}{{/each}}") });
    const big = "x".repeat(1024 * 1024);
    expect(() => wide({ rows: Array.from({ length: 20 }, () => big) })).toThrow(new RenderLimitError("eachOutputChars"));
    expect(RENDER_LIMITS.eachIterations).toBe(10_000);
    // The budget is per message, not per renderer.
    expect(nested({ a: list.slice(0, 20) }).html).toBe(fine.html);
  });

  it("takes the variable list from the compiled version when given", () => {
    const render = compileRenderer({ subject: "{{a}}", html: html("{{b}}"), variables: ["a", "b", "zz"] });
    expect(render({ a: 1, b: 2 }).missing).toEqual(["zz"]);
  });

  it("caches renderers per key with LRU eviction", () => {
    const cache = new RendererCache(2);
    let compiles = 0;
    const load = (n: number) => () => {
      compiles++;
      return { subject: `v${n}`, html: `<p>${n}</p>` };
    };
    const r1 = cache.getOrCompile("t:v1", load(1));
    expect(cache.getOrCompile("t:v1", load(1))).toBe(r1);
    cache.getOrCompile("t:v2", load(2));
    cache.get("t:v1"); // v1 is now the most recently used
    cache.getOrCompile("t:v3", load(3)); // evicts v2
    expect(cache.size).toBe(2);
    expect(cache.get("t:v2")).toBeUndefined();
    expect(cache.get("t:v1")).toBe(r1);
    expect(compiles).toBe(3);
    expect(() => new RendererCache(0)).toThrow(RangeError);

    // Bounded by size too: a large template pushes older ones out, but stays itself.
    const small = new RendererCache(10, 100);
    small.getOrCompile("a", { subject: "a", html: "x".repeat(40) });
    small.getOrCompile("b", { subject: "b", html: "x".repeat(40) });
    expect(small.size).toBe(2);
    small.getOrCompile("big", { subject: "c", html: "x".repeat(150) });
    expect([small.get("a"), small.get("b")]).toEqual([undefined, undefined]);
    expect(small.get("big")).toBeDefined();
  });
});
