import { Code } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { TEMPLATE_LIMITS } from "@emailsvc/render";
import { readError } from "@emailsvc/errors";
import { tenantKey } from "@emailsvc/tenancy";
import { as, code, mjmlWith, startHarness, tenant, type Harness, type StoreKind } from "./harness.js";

const { TemplateCategory } = templates;

const WELCOME = [
  "<mjml>",
  "  <mj-head>",
  "    <mj-title>Welcome {{name}}</mj-title>",
  "  </mj-head>",
  "  <mj-body background-color=\"{{brand_color}}\">",
  "    <mj-section>",
  "      <mj-column>",
  "        <mj-text color=\"{{brand_color}}\">Hello {{ name }}, your plan is {{metadata.plan}}.</mj-text>",
  "        <mj-image src=\"{{logo_url}}\" alt=\"{{company}}\" href=\"{{home_url}}\" />",
  "        <mj-button href=\"{{cta_url}}\" background-color=\"{{brand_color}}\">Start</mj-button>",
  "      </mj-column>",
  "    </mj-section>",
  "  </mj-body>",
  "</mjml>",
].join("\n");

function createReq(overrides: Partial<Pick<templates.CreateTemplateRequest, "name" | "subject" | "mjmlContent" | "category" | "slug">> & { ignoreSuppressions?: string[] } = {}) {
  return {
    name: "Welcome Email",
    subject: "Welcome, {{name}}!",
    mjmlContent: WELCOME,
    category: TemplateCategory.TRANSACTIONAL,
    ...overrides,
  };
}

describe.each<StoreKind>(["embedded", "mongodb"])("templates service over gRPC on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Version documents of one tenant, straight from the store. */
  const versionCount = (t: ReturnType<typeof tenant>) => h.store.collection("template_versions").count({ tenant: tenantKey(t.tenant) });

  it("keeps a transactional template's ignore_suppressions (sorted, once each), serves it compiled, and refuses it on marketing", async () => {
    const t = tenant();
    const failure = (p: Promise<unknown>) => p.then(() => { throw new Error("expected the call to fail"); }, readError);
    const { template } = await h.client.createTemplate(createReq({ slug: "reset", ignoreSuppressions: ["hard_bounce", "complaint", "hard_bounce"] }), as(t));
    expect(template!.ignoreSuppressions).toEqual(["complaint", "hard_bounce"]);
    const { compiled } = await h.client.getCompiledTemplate({ template: { case: "slug", value: "reset" }, version: 0 }, as(t));
    expect(compiled!.ignoreSuppressions).toEqual(["complaint", "hard_bounce"]);
    for (const [req, field] of [
      [createReq({ slug: "news", category: TemplateCategory.MARKETING, ignoreSuppressions: ["hard_bounce"] }), "ignore_suppressions"],
      [createReq({ slug: "odd", ignoreSuppressions: ["manual"] }), "ignore_suppressions[0]"],
    ] as const) {
      const err = await failure(h.client.createTemplate(req, as(t)));
      expect([err.code, err.fieldViolations.map((v) => v.field)]).toEqual([Code.InvalidArgument, [field]]);
    }
    // Turning it into a marketing template with overrides left is refused; [] removes them.
    const toMarketing = await failure(h.client.updateTemplate({ id: template!.id, category: TemplateCategory.MARKETING }, as(t)));
    expect(toMarketing.code).toBe(Code.InvalidArgument);
    const cleared = (await h.client.updateTemplate({ id: template!.id, ignoreSuppressions: { reasons: [] } }, as(t))).template!;
    expect([cleared.ignoreSuppressions, cleared.version]).toEqual([[], 1]);
    expect((await h.client.updateTemplate({ id: template!.id, category: TemplateCategory.MARKETING }, as(t))).template!.category).toBe(TemplateCategory.MARKETING);
  });

  it("creates a template with a derived slug, version 1 and its variables, and reads it back", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq(), as(t));
    expect(template!.id).toMatch(/^tpl_[0-9a-z]{26}$/);
    expect(template!.slug).toBe("welcome-email");
    expect(template!.name).toBe("Welcome Email");
    expect(template!.version).toBe(1);
    expect(template!.category).toBe(TemplateCategory.TRANSACTIONAL);
    expect(template!.mjmlContent).toBe(WELCOME);
    expect(template!.variables).toEqual(["brand_color", "company", "cta_url", "home_url", "logo_url", "metadata.plan", "name"]);

    const got = await h.client.getTemplate({ id: template!.id }, as(t));
    expect(got.template).toEqual(template);
  });

  it("compiles once on write and keeps {{placeholders}} intact in text, href, src, alt and colour attributes", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq(), as(t));
    const { compiled } = await h.client.getCompiledTemplate({ template: { case: "slug", value: "welcome-email" }, version: 0 }, as(t));
    expect(compiled!.templateId).toBe(template!.id);
    expect(compiled!.version).toBe(1);
    expect(compiled!.subject).toBe("Welcome, {{name}}!");
    expect(compiled!.category).toBe(TemplateCategory.TRANSACTIONAL);
    const html = compiled!.html;
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain("Hello {{ name }}, your plan is {{metadata.plan}}.");
    expect(html).toContain('href="{{cta_url}}"');
    expect(html).toContain('href="{{home_url}}"');
    expect(html).toContain('src="{{logo_url}}"');
    expect(html).toContain('alt="{{company}}"');
    expect(html).toContain("background-color:{{brand_color}}");
    expect(html).not.toContain("<mj-");
    expect(compiled!.variables).toEqual(template!.variables);
  });

  // Issue 16, defect 12: every compiled template linked fonts.googleapis.com (MJML's default
  // fonts; Ubuntu is mj-text's), and hid its preview text white on white (SpamAssassin's
  // HTML_FONT_LOW_CONTRAST).
  it("compiles for the inbox: no web font unless the template declares one, the preview hidden without a colour", async () => {
    const t = tenant();
    const compiledHtml = async (name: string, mjmlContent: string) => {
      const { template } = await h.client.createTemplate(createReq({ name, mjmlContent }), as(t));
      return (await h.client.getCompiledTemplate({ template: { case: "id", value: template!.id }, version: 0 }, as(t))).compiled!.html;
    };
    const withFont = await compiledHtml(
      "With a font",
      mjmlWith("x", "").replace("<mj-body>", '<mj-head><mj-font name="Raleway" href="https://fonts.example.com/raleway.css" /><mj-attributes><mj-all font-family="Raleway, Arial" /></mj-attributes></mj-head><mj-body>'),
    );
    expect(withFont).toContain("https://fonts.example.com/raleway.css");
    expect(withFont).not.toContain("googleapis");
    // A default template, compiled after one with a font: nothing of the other's leaks in.
    const plain = await compiledHtml("Plain", mjmlWith("Hello {{name}}").replace("<mj-body>", "<mj-head><mj-preview>Your June news</mj-preview></mj-head><mj-body>"));
    expect(plain).toContain("font-family:Ubuntu, Helvetica, Arial, sans-serif");
    expect(plain).not.toMatch(/googleapis|fonts\.example\.com|@import|<link[^>]+font/i);
    const preview = /<div style="([^"]*)">Your June news<\/div>/.exec(plain);
    expect(preview?.[1]).toMatch(/^display:none;/);
    expect(preview?.[1]).toContain("mso-hide:all");
    expect(preview?.[1]).not.toMatch(/color/);
    // The language is each message's: left undetermined in the version (see @emailsvc/render).
    expect(plain).toMatch(/<html lang="und"/);
  });

  it("derives unique slugs (-2, -3), rejects a taken given slug naming its holder, and validates slugs", async () => {
    const t = tenant();
    const a = (await h.client.createTemplate(createReq(), as(t))).template!;
    const b = (await h.client.createTemplate(createReq(), as(t))).template!;
    const c = (await h.client.createTemplate(createReq({ name: "welcome   EMAIL!" }), as(t))).template!;
    expect([a.slug, b.slug, c.slug]).toEqual(["welcome-email", "welcome-email-2", "welcome-email-3"]);
    const accented = (await h.client.createTemplate(createReq({ name: "Grüße & Ça va? — Été 2026" }), as(t))).template!;
    expect(accented.slug).toBe("grusse-ca-va-ete-2026");
    const symbols = (await h.client.createTemplate(createReq({ name: "!!!" }), as(t))).template!;
    expect(symbols.slug).toBe("template");

    const given = (await h.client.createTemplate(createReq({ slug: "order-receipt" }), as(t))).template!;
    expect(given.slug).toBe("order-receipt");
    const err = readError(await h.client.createTemplate(createReq({ slug: "welcome-email-2" }), as(t)).catch((e: unknown) => e));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.errorCode).toBe("slug_taken");
    expect(err.existingId).toBe(b.id);

    for (const slug of ["Welcome", "with space", "-lead", "trail-", "dou--ble", "", "x".repeat(101), "ümlaut"]) {
      const bad = readError(await h.client.createTemplate(createReq({ slug }), as(t)).catch((e: unknown) => e));
      expect([slug, bad.code, bad.fieldViolations[0]?.field]).toEqual([slug, Code.InvalidArgument, "slug"]);
    }
    expect((await h.client.listTemplates({ limit: 500 }, as(t))).templates).toHaveLength(6);
  });

  it("lets concurrent creates with one name each get their own slug", async () => {
    const t = tenant();
    const made = await Promise.all(Array.from({ length: 4 }, () => h.client.createTemplate(createReq({ name: "Race" }), as(t))));
    expect(made.map((m) => m.template!.slug).sort()).toEqual(["race", "race-2", "race-3", "race-4"]);
  });

  it("pages through templates with a cursor and rejects a tampered cursor", async () => {
    const t = tenant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await h.client.createTemplate(createReq({ name: `Page ${i}` }), as(t))).template!.id);
    const seen: string[] = [];
    let cursor = "";
    do {
      const page = await h.client.listTemplates({ limit: 2, cursor }, as(t));
      expect(page.templates.length).toBeLessThanOrEqual(2);
      for (const item of page.templates) {
        expect(item.mjmlContent).toBe(""); // GetTemplate returns it
        expect(item.subject).toBe("Welcome, {{name}}!");
      }
      seen.push(...page.templates.map((x) => x.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);
    const first = await h.client.listTemplates({ limit: 2 }, as(t));
    expect(await code(h.client.listTemplates({ cursor: first.nextCursor + "x" }, as(t)))).toBe(Code.InvalidArgument);
    const forged = Buffer.from(JSON.stringify({ v: 1, after: "sub_00000000000000000000000000", filter: "" })).toString("base64url");
    expect(await code(h.client.listTemplates({ cursor: forged }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.client.listTemplates({ limit: 501 }, as(t)))).toBe(Code.InvalidArgument);
  });

  it("makes a new version on a subject or MJML change and keeps old versions retrievable", async () => {
    const t = tenant();
    const v1 = (await h.client.createTemplate(createReq(), as(t))).template!;

    // Name and category change in place.
    const renamed = (await h.client.updateTemplate({ id: v1.id, name: "Renamed", category: TemplateCategory.MARKETING }, as(t))).template!;
    expect([renamed.version, renamed.name, renamed.category, renamed.slug]).toEqual([1, "Renamed", TemplateCategory.MARKETING, "welcome-email"]);
    // The same content again changes nothing.
    const same = (await h.client.updateTemplate({ id: v1.id, subject: v1.subject, mjmlContent: v1.mjmlContent }, as(t))).template!;
    expect(same.version).toBe(1);

    const v2 = (await h.client.updateTemplate({ id: v1.id, subject: "Hi {{first_name}}" }, as(t))).template!;
    expect(v2.version).toBe(2);
    expect(v2.variables).toContain("first_name");
    expect(v2.variables).toContain("name"); // the body still uses it
    const body3 = mjmlWith("New body for {{first_name}} <a href=\"{{link}}\">go</a>");
    const v3 = (await h.client.updateTemplate({ id: v1.id, mjmlContent: body3 }, as(t))).template!;
    expect(v3.version).toBe(3);
    expect(v3.subject).toBe("Hi {{first_name}}");
    expect(v3.mjmlContent).toBe(body3);
    expect(v3.variables).toEqual(["first_name", "link"]);
    expect((await h.client.getTemplate({ id: v1.id }, as(t))).template).toEqual(v3);

    const at = async (version: number) =>
      (await h.client.getCompiledTemplate({ template: { case: "id", value: v1.id }, version }, as(t))).compiled!;
    expect((await at(1)).subject).toBe("Welcome, {{name}}!");
    expect((await at(1)).html).toContain("Hello {{ name }}");
    expect((await at(2)).subject).toBe("Hi {{first_name}}");
    expect((await at(2)).html).toBe((await at(1)).html); // subject-only change reuses the compiled HTML
    expect((await at(3)).html).toContain("New body for {{first_name}}");
    expect((await at(0)).version).toBe(3);
    expect(await code(at(4))).toBe(Code.NotFound);
    expect(await code(at(-1))).toBe(Code.InvalidArgument);
    expect(await versionCount(t)).toBe(3);
  });

  it("lets concurrent updates all land, one version each, and leaves no orphan versions", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq(), as(t));
    const subjects = ["A {{a}}", "B {{b}}", "C {{c}}", "D {{d}}"];
    const results = await Promise.all(subjects.map((subject) => h.client.updateTemplate({ id: template!.id, subject }, as(t))));
    expect(results.map((r) => r.template!.version).sort()).toEqual([2, 3, 4, 5]);
    const final = (await h.client.getTemplate({ id: template!.id }, as(t))).template!;
    expect(final.version).toBe(5);
    const history = [];
    for (let v = 2; v <= 5; v++) {
      history.push((await h.client.getCompiledTemplate({ template: { case: "id", value: template!.id }, version: v }, as(t))).compiled!.subject);
    }
    expect([...history].sort()).toEqual(subjects);
    expect(final.subject).toBe(history[3]);
    expect(await versionCount(t)).toBe(5);

    // Different fields at once: both changes land.
    const body = mjmlWith("Merged {{x}}");
    await Promise.all([
      h.client.updateTemplate({ id: template!.id, subject: "Merged subject" }, as(t)),
      h.client.updateTemplate({ id: template!.id, mjmlContent: body }, as(t)),
    ]);
    const merged = (await h.client.getTemplate({ id: template!.id }, as(t))).template!;
    expect([merged.version, merged.subject, merged.mjmlContent]).toEqual([7, "Merged subject", body]);
  });

  it("ignores a version left behind by a crashed writer: the committed one is served", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq(), as(t));
    const versions = h.store.collection("template_versions");
    const v1 = (await versions.findOne({ tenant: tenantKey(t.tenant), template_id: template!.id, version: 1 }))!;
    // A writer wrote version 2 and died before moving the template's pointer.
    await versions.insertOne({ ...v1, _id: "tpv_00000000000000000000000000", version: 2, prev: v1._id, subject: "orphan" });
    await h.client.updateTemplate({ id: template!.id, subject: "committed v2" }, as(t));
    const at = async (version: number) =>
      (await h.client.getCompiledTemplate({ template: { case: "id", value: template!.id }, version }, as(t))).compiled!.subject;
    expect(await at(2)).toBe("committed v2"); // the pointer names it
    await h.client.updateTemplate({ id: template!.id, subject: "v3" }, as(t));
    expect(await at(2)).toBe("committed v2"); // two documents say version 2: v3's prev decides
    expect(await at(1)).toBe("Welcome, {{name}}!");
    expect(await at(3)).toBe("v3");
  });

  it("rejects invalid MJML naming lines and problems, and an update with it changes nothing", async () => {
    const t = tenant();
    const typo = WELCOME.replace("<mj-column>", "<mj-colum>").replace("</mj-column>", "</mj-colum>");
    const err = readError(await h.client.createTemplate(createReq({ mjmlContent: typo }), as(t)).catch((e: unknown) => e));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.errorCode).toBe("invalid_mjml");
    expect(err.fieldViolations).toContainEqual({
      $typeName: "emailsvc.common.v1.FieldViolation",
      field: "mjml_content",
      description: "line 7: Element mj-colum doesn't exist or is not registered (mj-colum)",
    });

    const unclosed = WELCOME.replace("      </mj-column>\n", "");
    const malformed = readError(await h.client.createTemplate(createReq({ mjmlContent: unclosed }), as(t)).catch((e: unknown) => e));
    expect(malformed.errorCode).toBe("invalid_mjml");
    expect(malformed.fieldViolations[0]!.description).toBe("line 11: <mj-column> opened on line 7 is not closed before </mj-section>");

    const badValue = readError(
      await h.client.createTemplate(createReq({ mjmlContent: mjmlWith("x").replace("<mj-text>", '<mj-text color="not-a-colour" bogus="1">') }), as(t)).catch((e: unknown) => e),
    );
    expect(badValue.fieldViolations.map((v) => v.description)).toEqual([
      "line 6: Attribute bogus is illegal (mj-text)",
      "line 6: Attribute color has invalid value: not-a-colour for type Color (mj-text)",
    ]);

    for (const bad of ["not mjml at all", "<mjml><mj-section></mj-section></mjml>", "<mjml><mj-body><mj-include path=\"x.mjml\" /></mj-body></mjml>"]) {
      expect(readError(await h.client.createTemplate(createReq({ mjmlContent: bad }), as(t)).catch((e: unknown) => e)).errorCode).toBe("invalid_mjml");
    }
    expect((await h.client.listTemplates({}, as(t))).templates).toEqual([]);
    expect(await versionCount(t)).toBe(0);

    const { template } = await h.client.createTemplate(createReq(), as(t));
    expect(await code(h.client.updateTemplate({ id: template!.id, subject: "New", mjmlContent: typo }, as(t)))).toBe(Code.InvalidArgument);
    expect((await h.client.getTemplate({ id: template!.id }, as(t))).template).toEqual(template);
    expect(await versionCount(t)).toBe(1);
  });

  it("refuses a template beyond the limits on create and update, naming the field, the line and the limit, and stores nothing", async () => {
    const t = tenant();
    const deep = (n: number) => "{{#if x}}".repeat(n) + "x" + "{{/if}}".repeat(n);
    const violations = async (req: Parameters<typeof h.client.createTemplate>[0]) => {
      const err = readError(await h.client.createTemplate(req, as(t)).catch((e: unknown) => e));
      return { code: err.code, errorCode: err.errorCode, errors: err.fieldViolations.map((v) => `${v.field}: ${v.description}`) };
    };
    const limit = { code: Code.InvalidArgument, errorCode: "template_exceeds_limits" };
    expect(await violations(createReq({ mjmlContent: mjmlWith(deep(3000)) }))).toEqual({
      ...limit,
      errors: [
        expect.stringMatching(/^mjml_content: line 6: blocks nested 3,000 deep; at most 32 /),
        "mjml_content: line 6: more than 1,000 {{…}} expressions (comments do not count)",
      ],
    });
    expect(await violations(createReq({ subject: deep(40) }))).toEqual({ ...limit, errors: [expect.stringMatching(/^subject: line 1: blocks nested 40 deep; at most 32 /)] });
    // Markup nested 100,000 deep reaches neither MJML's validator nor Handlebars' parser.
    const bold = "<b>".repeat(60_000) + "</b>".repeat(60_000);
    expect(await violations(createReq({ mjmlContent: mjmlWith(bold) }))).toEqual({ ...limit, errors: ["mjml_content: line 6: elements nested 60,005 deep; at most 256"] });
    const wrappers = `<mjml><mj-body>${"<mj-wrapper>".repeat(3000)}${"</mj-wrapper>".repeat(3000)}</mj-body></mjml>`;
    expect(await violations(createReq({ mjmlContent: wrappers }))).toEqual({ ...limit, errors: ["mjml_content: line 1: elements nested 3,002 deep; at most 256"] });
    // Just inside the limits is a template like any other.
    const { template } = await h.client.createTemplate(createReq({ subject: deep(TEMPLATE_LIMITS.blockDepth), mjmlContent: mjmlWith(deep(TEMPLATE_LIMITS.blockDepth)) }), as(t));
    expect(template!.variables).toEqual(["x"]);
    expect(await versionCount(t)).toBe(1);

    // An update beyond the limits changes nothing.
    const update = readError(await h.client.updateTemplate({ id: template!.id, mjmlContent: mjmlWith(deep(3000)) }, as(t)).catch((e: unknown) => e));
    expect([update.errorCode, update.fieldViolations[0]?.field]).toEqual(["template_exceeds_limits", "mjml_content"]);
    expect((await h.client.getTemplate({ id: template!.id }, as(t))).template).toEqual(template);
    expect(await versionCount(t)).toBe(1);
  });

  it("refuses MJML whose compiled HTML would be larger than a message may be", async () => {
    const t = tenant();
    const section = "<mj-section><mj-column><mj-text>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</mj-text></mj-column></mj-section>\n";
    const err = readError(await h.client.createTemplate(createReq({ mjmlContent: mjmlWith("x", section.repeat(300)) }), as(t)).catch((e: unknown) => e));
    expect([err.errorCode, err.fieldViolations.map((v) => v.description)]).toEqual([
      "template_exceeds_limits",
      [expect.stringMatching(/^in the HTML MJML made of it: [\d,]+ characters of HTML; at most 524,288$/)],
    ]);
  });

  it("previews a version stored before the limits as a 400 naming them, however often it is asked", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq(), as(t));
    // As a database written before the limits holds it: accepted then, 3,000 blocks deep.
    const versions = h.store.collection("template_versions");
    const deep = "{{#if x}}".repeat(3000) + "x" + "{{/if}}".repeat(3000);
    await versions.updateOne({ tenant: tenantKey(t.tenant), template_id: template!.id, version: 1 }, { $set: { html: `<html><body>${deep}</body></html>` } });
    for (let i = 0; i < 3; i++) {
      const err = readError(await h.client.previewTemplate({ id: template!.id, variables: { x: true } }, as(t)).catch((e: unknown) => e));
      expect([err.code, err.errorCode, err.message]).toEqual([Code.InvalidArgument, "template_exceeds_limits", "this version of the template cannot be rendered; update the template"]);
      expect(err.fieldViolations.map((v) => [v.field, v.description])).toEqual([
        ["mjml_content", expect.stringMatching(/^in the HTML MJML made of it: line 1: blocks nested 3,000 deep; at most 32 /)],
        ["mjml_content", "in the HTML MJML made of it: line 1: more than 1,000 {{…}} expressions (comments do not count)"],
      ]);
    }
    // Updating it is the way out.
    await h.client.updateTemplate({ id: template!.id, mjmlContent: mjmlWith("Fixed {{x}}") }, as(t));
    expect((await h.client.previewTemplate({ id: template!.id, variables: { x: "1" } }, as(t))).html).toContain("Fixed 1");
  });

  it("rejects triple-stash, helpers, partials and bad variable names with the line, and accepts if/each/else", async () => {
    const t = tenant();
    const cases: [string, string][] = [
      [mjmlWith("Hi {{{bio}}}"), "line 6: {{{bio}}} writes unescaped HTML and is not allowed; use {{bio}}"],
      [mjmlWith("{{lookup items 1}}"), 'line 6: helper "lookup" is not supported: only {{variable}}, {{#if}}, {{#unless}} and {{#each}}'],
      [mjmlWith("{{> footer}}"), "line 6: partials ({{> name}}) are not supported"],
      [mjmlWith("{{#with user}}{{name}}{{/with}}"), 'line 6: block "{{#with}}" is not supported: only {{#if}}, {{#unless}} and {{#each}}'],
      [mjmlWith("{{first-name}}"), 'line 6: "first-name" is not a valid variable name (letters, digits, _ and dots)'],
      [mjmlWith("{{#if x}}open"), "line 10: syntax error: the template ends inside an open {{…}} or {{#block}}"],
      // A URL attribute's value is checked whole per message (@emailsvc/render): a block must close in it.
      [mjmlWith('<a href="{{#if a}}https://e.x/">x</a>{{/if}}'), "line 6: the {{#if}}/{{#unless}}/{{#each}} blocks in the value of href must open and close within it (its value is checked as a whole)"],
    ];
    for (const [mjmlContent, description] of cases) {
      const err = readError(await h.client.createTemplate(createReq({ mjmlContent }), as(t)).catch((e: unknown) => e));
      expect([err.code, err.errorCode, err.fieldViolations[0]?.field, err.fieldViolations[0]?.description]).toEqual([
        Code.InvalidArgument,
        "invalid_template",
        "mjml_content",
        description,
      ]);
    }
    const badSubject = readError(await h.client.createTemplate(createReq({ subject: "Hi {{#each}}" }), as(t)).catch((e: unknown) => e));
    expect([badSubject.errorCode, badSubject.fieldViolations[0]?.field]).toEqual(["invalid_template", "subject"]);
    expect(await versionCount(t)).toBe(0);

    const blocks = mjmlWith(
      "{{#if vip}}Dear VIP{{else}}Hello{{/if}} {{#each items}}{{name}} x{{qty}} {{@index}}{{else}}none{{/each}} {{#unless paid}}unpaid{{/unless}}",
    );
    const { template } = await h.client.createTemplate(createReq({ subject: "{{{ name }}} ordered", mjmlContent: blocks }), as(t));
    expect(template!.variables).toEqual(["items", "name", "paid", "vip"]);
  });

  it("previews: escapes variables in HTML, keeps the subject on one line, derives text and lists missing variables", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(
      createReq({ subject: "Hello {{name}} from {{company}}", mjmlContent: mjmlWith('Hi {{name}}, see <a href="{{link}}">your account</a>. {{footer}}') }),
      as(t),
    );
    const preview = await h.client.previewTemplate(
      { id: template!.id, variables: { name: "<script>alert(1)</script>\r\nBcc: victim@example.com", link: "https://example.com/a?b=1&c=2" } },
      as(t),
    );
    expect(preview.html).toContain("Hi &lt;script&gt;alert(1)&lt;/script&gt;");
    expect(preview.html).not.toContain("<script>");
    expect(preview.html).toContain('href="https://example.com/a?b&#x3D;1&amp;c&#x3D;2"');
    expect(preview.subject).toBe("Hello <script>alert(1)</script> Bcc: victim@example.com from");
    expect(preview.subject).not.toMatch(/[\r\n]/);
    expect(preview.text).toContain("Hi <script>alert(1)</script>");
    expect(preview.text).toMatch(/your account\s+\[https:\/\/example\.com\/a\?b=1&c=2\]/);
    expect(preview.text).not.toMatch(/<(p|div|table)/);
    expect(preview.missingVariables).toEqual(["company", "footer"]);

    const none = await h.client.previewTemplate({ id: template!.id }, as(t));
    expect(none.missingVariables).toEqual(["company", "footer", "link", "name"]);

    const nested = (
      await h.client.createTemplate(createReq({ name: "Nested", mjmlContent: mjmlWith("{{#each a}}{{#each ../a}}{{#each ../../a}}.{{/each}}{{/each}}{{/each}}") }), as(t))
    ).template!;
    const exploding = readError(
      await h.client.previewTemplate({ id: nested.id, variables: { a: Array.from({ length: 1000 }, (_, i) => i) } }, as(t)).catch((e: unknown) => e),
    );
    expect([exploding.code, exploding.errorCode]).toEqual([Code.ResourceExhausted, "render_too_large"]);

    const tooBig = readError(await h.client.previewTemplate({ id: template!.id, variables: { blob: "x".repeat(70 * 1024) } }, as(t)).catch((e: unknown) => e));
    expect([tooBig.code, tooBig.errorCode]).toEqual([Code.ResourceExhausted, "variables_too_large"]);
  });

  it("previews the current version after an update", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq({ mjmlContent: mjmlWith("first {{x}}") }), as(t));
    expect((await h.client.previewTemplate({ id: template!.id, variables: { x: "1" } }, as(t))).html).toContain("first 1");
    await h.client.updateTemplate({ id: template!.id, mjmlContent: mjmlWith("second {{x}}") }, as(t));
    const after = await h.client.previewTemplate({ id: template!.id, variables: { x: "2" } }, as(t));
    expect(after.html).toContain("second 2");
    expect(after.html).not.toContain("first");
  });

  it("soft-deletes: hidden everywhere, slug free at once, queued versions still served by id and version", async () => {
    const t = tenant();
    const { template } = await h.client.createTemplate(createReq({ name: "Bye" }), as(t));
    const id = template!.id;
    await h.client.deleteTemplate({ id }, as(t));
    expect(await code(h.client.getTemplate({ id }, as(t)))).toBe(Code.NotFound);
    expect(await code(h.client.updateTemplate({ id, name: "x" }, as(t)))).toBe(Code.NotFound);
    expect(await code(h.client.previewTemplate({ id }, as(t)))).toBe(Code.NotFound);
    expect(await code(h.client.deleteTemplate({ id }, as(t)))).toBe(Code.NotFound);
    expect((await h.client.listTemplates({}, as(t))).templates).toEqual([]);
    expect(await code(h.client.getCompiledTemplate({ template: { case: "slug", value: "bye" } }, as(t)))).toBe(Code.NotFound);
    expect(await code(h.client.getCompiledTemplate({ template: { case: "id", value: id }, version: 0 }, as(t)))).toBe(Code.NotFound);
    const queued = (await h.client.getCompiledTemplate({ template: { case: "id", value: id }, version: 1 }, as(t))).compiled!;
    expect([queued.templateId, queued.slug, queued.version]).toEqual([id, "bye", 1]);

    const again = (await h.client.createTemplate(createReq({ name: "Bye" }), as(t))).template!;
    expect(again.slug).toBe("bye");
    expect(again.id).not.toBe(id);
    expect((await h.client.getCompiledTemplate({ template: { case: "slug", value: "bye" } }, as(t))).compiled!.templateId).toBe(again.id);
  });

  it("validates input and changes nothing on bad input", async () => {
    const t = tenant();
    const invalid: [Partial<templates.CreateTemplateRequest>, Code, string][] = [
      [{ name: "" }, Code.InvalidArgument, "name"],
      [{ name: "x".repeat(201) }, Code.InvalidArgument, "name"],
      [{ subject: "" }, Code.InvalidArgument, "subject"],
      [{ subject: "Hi\r\nBcc: x@example.com" }, Code.InvalidArgument, "subject"],
      [{ subject: "x".repeat(999) }, Code.InvalidArgument, "subject"],
      [{ mjmlContent: "" }, Code.InvalidArgument, "mjml_content"],
      [{ mjmlContent: mjmlWith("x".repeat(513 * 1024)) }, Code.ResourceExhausted, "mjml_content"],
      [{ category: TemplateCategory.UNSPECIFIED }, Code.InvalidArgument, "category"],
    ];
    for (const [overrides, expected, field] of invalid) {
      const err = readError(await h.client.createTemplate(createReq(overrides), as(t)).catch((e: unknown) => e));
      expect([field, err.code, err.fieldViolations[0]?.field]).toEqual([field, expected, field]);
    }
    expect((await h.client.listTemplates({}, as(t))).templates).toEqual([]);
    expect(await versionCount(t)).toBe(0);

    const { template } = await h.client.createTemplate(createReq(), as(t));
    for (const update of [{ name: "" }, { subject: "a\nb" }, { mjmlContent: "<mjml>" }, { subject: "{{{{raw}}}}{{{{/raw}}}}" }]) {
      expect(await code(h.client.updateTemplate({ id: template!.id, ...update }, as(t)))).toBe(Code.InvalidArgument);
    }
    expect((await h.client.getTemplate({ id: template!.id }, as(t))).template).toEqual(template);
    expect(await versionCount(t)).toBe(1);
    expect(await code(h.client.getCompiledTemplate({ version: 0 }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.client.getTemplate({ id: "" }, as(t)))).toBe(Code.NotFound);
  });

  it("keeps tenants apart: another account's or mode's id or slug is not found", async () => {
    const owner = tenant("live");
    const { template } = await h.client.createTemplate(createReq({ name: "Private" }), as(owner));
    const id = template!.id;
    for (const t of [tenant("live"), tenant("test", owner.tenant.accountId)]) {
      expect(await code(h.client.getTemplate({ id }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.client.updateTemplate({ id, name: "stolen" }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.client.deleteTemplate({ id }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.client.previewTemplate({ id }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.client.getCompiledTemplate({ template: { case: "id", value: id }, version: 1 }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.client.getCompiledTemplate({ template: { case: "slug", value: "private" } }, as(t)))).toBe(Code.NotFound);
      expect((await h.client.listTemplates({}, as(t))).templates).toEqual([]);
      // The same slug is free in another tenant.
      expect((await h.client.createTemplate(createReq({ name: "Private" }), as(t))).template!.slug).toBe("private");
    }
    expect((await h.client.getTemplate({ id }, as(owner))).template!.name).toBe("Private");
    expect(await code(h.client.getTemplate({ id }, { headers: {} }))).toBe(Code.Unauthenticated);
  });
});

describe.each<StoreKind>(["embedded", "mongodb"])("purge of deleted templates on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { purgeAfterMs: 0, purgeIntervalMs: 3_600_000 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("removes a deleted template and its versions once the retention has passed, and nothing else", async () => {
    const t = tenant();
    const gone = (await h.client.createTemplate(createReq({ name: "Gone" }), as(t))).template!;
    await h.client.updateTemplate({ id: gone.id, subject: "v2" }, as(t));
    const kept = (await h.client.createTemplate(createReq({ name: "Kept" }), as(t))).template!;
    await h.client.deleteTemplate({ id: gone.id }, as(t));
    await new Promise((r) => setTimeout(r, 5));
    expect(await h.service.purge()).toBe(1);
    expect(await code(h.client.getCompiledTemplate({ template: { case: "id", value: gone.id }, version: 1 }, as(t)))).toBe(Code.NotFound);
    expect(await h.store.collection("template_versions").count({ template_id: gone.id })).toBe(0);
    expect(await h.store.collection("templates").count({ _id: gone.id })).toBe(0);
    expect((await h.client.getTemplate({ id: kept.id }, as(t))).template!.name).toBe("Kept");
    expect(await h.service.purge()).toBe(0);
  });
});
