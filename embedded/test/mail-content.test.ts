import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, memoryLogger, SmtpSink, spamAssassinReport, type ArrivedMessage } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { startPlatform } from "../src/platform";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// What leaves, as a deliverability engineer and an attacker read it (issue 16,
// defects 12 and 11c): live mail over SMTP to a real server (npm smtp-server),
// each message parsed (mailparser) and scored by SpamAssassin; previews over REST.

const NEWSLETTER = `<mjml>
  <mj-head><mj-preview>Your June news, in short</mj-preview></mj-head>
  <mj-body>
    <mj-section><mj-column><mj-text>Hello {{metadata.name}}, here is what is new this month.</mj-text></mj-column></mj-section>
    <mj-section>
      <mj-column><mj-text>Left column</mj-text></mj-column>
      <mj-column><mj-text>Right column</mj-text></mj-column>
    </mj-section>
    <mj-section><mj-column>
      <mj-table><tr><th>Item</th><th>Price</th></tr><tr><td>Coffee</td><td>4.50</td></tr><tr><td>Green tea</td><td>3.00</td></tr></mj-table>
      <mj-button href="{{cta_url}}">Read more</mj-button>
      <mj-text><a href="{{unsubscribe_url}}">Unsubscribe</a></mj-text>
    </mj-column></mj-section>
  </mj-body>
</mjml>`;

/** A header's value as it was sent, unfolded (mailparser turns List-* headers into structures). */
const header = (mail: ArrivedMessage, name: string) =>
  mail.parsed.headerLines.find((h) => h.key === name.toLowerCase())?.line.replace(/^[^:]+:\s*/, "").replace(/\r?\n\s+/g, " ");
const htmlOf = (mail: ArrivedMessage) => String(mail.parsed.html);

describe("mail content (live over SMTP)", () => {
  let sink: SmtpSink;
  let t: TestPlatform;
  let live: string;
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: live, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    t = await startTestPlatform("mail-content", {
      ...GENEROUS_RATE_LIMIT_ENV,
      EMAIL_PROVIDER: "smtp",
      SMTP_URL: sink.url(),
      EMAIL_FROM: "Acme <hello@acme.test>",
      PUBLIC_API_URL: "https://api.acme.test",
      PREFERENCES_URL: "https://preferences.acme.test",
    });
    live = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const template = async (name: string, category: "transactional" | "marketing", mjml = NEWSLETTER) => {
    const res = await call("POST", "/api/v1/templates", { name, subject: `${name} for {{metadata.name}}`, category, mjml_content: mjml });
    expect(res.status).toBe(201);
    return res.body as { id: string; slug: string };
  };
  const subscriber = async (email: string, extra: Record<string, unknown> = {}) => {
    const res = await call("POST", "/api/v1/subscribers", { email, metadata: { name: email.split("@")[0] }, ...extra });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  /** Sends and waits for the relay to have it; returns what arrived. */
  const send = async (slug: string, to: string, variables: Record<string, unknown> = {}) => {
    const before = sink.to(to).length;
    const sent = await call("POST", "/api/v1/emails/send", { template_slug: slug, to, variables });
    expect(sent.status).toBe(202);
    const email = await eventually(() => call("GET", `/api/v1/emails/${sent.body.id}`), (r) => r.body.status !== "queued", 400);
    expect(email.body).toMatchObject({ status: "sent" });
    return sink.to(to)[before]!;
  };
  const campaign = async (templateId: string, tag: string) => {
    const created = await call("POST", "/api/v1/campaigns", { name: `To ${tag}`, template_id: templateId, tag_filter: { include_tags: [tag], match: "any" } });
    expect(created.status).toBe(201);
    expect((await call("POST", `/api/v1/campaigns/${created.body.id}/send`)).status).toBe(200);
    return created.body.id as string;
  };
  const arrived = (to: string, count: number) => eventually(async () => sink.to(to), (mails) => mails.length >= count, 400);

  // Defect 12: a campaign whose template was `transactional` went out without
  // List-Unsubscribe and List-Id, and each campaign had a List-Id of its own.
  it("gives every campaign's mail, whatever its template's category, one-click List-Unsubscribe and the account's one List-Id; X-Campaign-Id names the campaign", async () => {
    const receipt = await template("Receipt", "transactional");
    const news = await template("News", "marketing");
    await subscriber("camp-a@example.com", { tags: ["campaign-a"] });
    await subscriber("camp-b@example.com", { tags: ["campaign-b"] });
    const first = await campaign(receipt.id, "campaign-a");
    const second = await campaign(news.id, "campaign-b");
    const [a] = await arrived("camp-a@example.com", 1);
    const [b] = await arrived("camp-b@example.com", 1);

    for (const [mail, id] of [[a!, first], [b!, second]] as const) {
      expect(header(mail, "List-Unsubscribe")).toMatch(/^<https:\/\/api\.acme\.test\/unsubscribe\?token=[\w-]+\.[\w-]+\.[\w-]+>$/);
      expect(header(mail, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
      expect(header(mail, "X-Campaign-Id")).toBe(id);
    }
    // RFC 2919: the list, not the send: one List-Id for the account's live mail.
    const listId = `<${t.accountId}.live.acme.test>`;
    expect(header(a!, "List-Id")).toBe(listId);
    expect(header(b!, "List-Id")).toBe(listId);
    // A marketing send outside a campaign is on the same list; transactional mail is no list mail.
    const single = await send(news.slug, "single@example.com", {});
    expect(header(single, "List-Id")).toBe(listId);
    expect(header(single, "X-Campaign-Id")).toBeUndefined();
    const transactional = await send(receipt.slug, "single@example.com", {});
    expect(header(transactional, "List-Id")).toBeUndefined();
    expect(header(transactional, "List-Unsubscribe")).toBeUndefined();
  });

  // Defect 12: the HTML said lang="und".
  it("names the recipient's language in <html lang> (a subscriber's locale), else en; a template's declared language wins", async () => {
    const mail = await template("Language", "transactional", "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>");
    const italian = await template("Italiano", "transactional", '<mjml lang="it"><mj-body><mj-section><mj-column><mj-text>Ciao</mj-text></mj-column></mj-section></mj-body></mjml>');
    await subscriber("lang-de@example.com", { locale: "de", tags: ["lang"] });
    const lang = (m: ArrivedMessage) => /<html lang="([^"]*)"/.exec(htmlOf(m))?.[1];
    expect(lang(await send(mail.slug, "lang-de@example.com"))).toBe("de");
    expect(lang(await send(mail.slug, "no-subscriber@example.com"))).toBe("en");
    expect(lang(await send(italian.slug, "lang-de@example.com"))).toBe("it");
    // A campaign's recipients, looked up in a batch, too.
    await subscriber("lang-fr@example.com", { locale: "fr", tags: ["lang"] });
    await campaign(mail.id, "lang");
    const [fr] = await arrived("lang-fr@example.com", 1);
    expect(lang(fr!)).toBe("fr");
    // A preview has no recipient.
    expect((await call("POST", `/api/v1/templates/${mail.id}/preview`, { variables: {} })).body.html).toMatch(/<html lang="en"/);
  });

  // Defect 12: MJML's default fonts made every mail load fonts.googleapis.com;
  // the preview text was hidden white on white (HTML_FONT_LOW_CONTRAST);
  // the text part ran table cells together.
  it("loads no third-party font, hides the preview text without a colour trick (SpamAssassin agrees), and keeps table cells apart in the text part", async () => {
    const news = await template("Inbox", "marketing");
    const preview = await call("POST", `/api/v1/templates/${news.id}/preview`, { variables: { metadata: { name: "Ada" } } });
    expect(preview.body.html).not.toContain("googleapis");
    await subscriber("inbox@example.com");
    const mail = await send(news.slug, "inbox@example.com", { cta_url: "https://acme.test/june" });
    expect(htmlOf(mail)).not.toMatch(/googleapis|fonts\.gstatic/);
    const hidden = /<div style="([^"]*)">\s*Your June news, in short/.exec(htmlOf(mail));
    expect(hidden?.[1]).toMatch(/display:none/);
    expect(hidden?.[1]).not.toMatch(/color/);

    const spam = await spamAssassinReport(mail.raw);
    expect({ rules: spam.rules, report: spam.report }).toEqual({ rules: expect.not.arrayContaining(["HTML_FONT_LOW_CONTRAST"]), report: spam.report });
    expect(spam.score).toBeLessThan(1);

    const text = mail.parsed.text!;
    expect(text).not.toContain("Your June news");
    expect(text).toMatch(/^Left column\n+Right column$/m);
    expect(text).toMatch(/^Item +Price$/m);
    expect(text).toMatch(/^Coffee +4\.50$/m);
    expect(text).toMatch(/^Green tea +3\.00$/m);
    expect(text).toContain("Read more [https://acme.test/june]");
  });

  // Defect 11c: `javascript:` URLs in variables landed in href.
  it("never puts a script URL from a variable into an href, in the preview or in the sent message", async () => {
    const links = await template(
      "Links",
      "transactional",
      '<mjml><mj-body><mj-section><mj-column><mj-button href="{{cta_url}}">Open</mj-button><mj-image src="{{logo}}" href="{{home}}" alt="logo" /><mj-text><a href="{{cta_url}}">again</a></mj-text></mj-column></mj-section></mj-body></mjml>',
    );
    const attacks = ["javascript:alert(document.domain)", "JaVaScRiPt:alert(1)", "  javascript:alert(1)", "java\tscript:alert(1)", "&#106;avascript:alert(1)", "data:text/html,<script>alert(1)</script>", "vbscript:msgbox(1)"];
    const hrefsOf = (html: string) => [...html.matchAll(/\s(?:href|src)="([^"]*)"/g)].map((m) => m[1]!).filter((v) => !v.startsWith("https://"));
    for (const url of attacks) {
      const preview = await call("POST", `/api/v1/templates/${links.id}/preview`, { variables: { cta_url: url, logo: url, home: url } });
      expect(preview.status).toBe(200);
      expect({ url, hrefs: hrefsOf(preview.body.html) }).toEqual({ url, hrefs: ["#", "#", "about:blank", "#"] });
      expect(preview.body.html).not.toMatch(/(javascript|vbscript|data):/i);
    }
    const mail = await send(links.slug, "links@example.com", { cta_url: attacks[0], logo: attacks[1], home: attacks[5] });
    expect(htmlOf(mail)).not.toMatch(/(javascript|vbscript|data):/i);
    expect(hrefsOf(htmlOf(mail))).toEqual(["#", "#", "about:blank", "#"]);
    expect(mail.parsed.text).not.toMatch(/javascript/i);
    // Safe ones go through as given.
    const fine = await send(links.slug, "links@example.com", { cta_url: "https://acme.test/a?b=1", logo: "https://acme.test/logo.png", home: "mailto:hello@acme.test" });
    expect(htmlOf(fine)).toContain('href="https://acme.test/a?b&#x3D;1"');
    expect(htmlOf(fine)).toContain('href="mailto:hello@acme.test"');
    expect(htmlOf(fine)).toContain('src="https://acme.test/logo.png"');
  });
});

// Defect 12: without PUBLIC_API_URL, live mail carried localhost links and no
// one-click header, and nothing said so at start.
describe("links in mail at start", () => {
  const start = async (env: Record<string, string>, gatewayHost = "127.0.0.1") => {
    const sink = await new SmtpSink().start();
    const dataDir = mkdtempSync(join(tmpdir(), "mail-links-"));
    const { logger, logs } = memoryLogger("embedded");
    const platform = await startPlatform({
      dataDir,
      gatewayPort: 0,
      gatewayHost,
      adminToken: "mail-links-admin-token-0123456789",
      logger,
      env: { PORTAL_PORT: String(await freePort()), EMAIL_FROM: "Acme <hello@acme.test>", ...env, ...(env.EMAIL_PROVIDER ? { SMTP_URL: sink.url() } : {}) },
    });
    await platform.close();
    await sink.close();
    rmSync(dataDir, { recursive: true, force: true });
    return logs.filter((line) => line.level === 40 && /links in mail/.test(line.msg)).map((line) => ({ component: line.component, msg: line.msg as string }));
  };

  it("warns once from delivery when live mail over SMTP would carry links to this machine or over http, naming what to set", async () => {
    const warnings = await start({ EMAIL_PROVIDER: "smtp" });
    expect(warnings).toEqual([{ component: "delivery", msg: expect.stringContaining("PUBLIC_API_URL=http://localhost:8080 is this machine or a private network and is not https") }]);
    expect(warnings[0]!.msg).toContain("PREFERENCES_URL=http://localhost:");
    expect(warnings[0]!.msg).toContain("set PUBLIC_API_URL and PREFERENCES_URL");
    expect(await start({ EMAIL_PROVIDER: "smtp", PUBLIC_API_URL: "http://api.acme.test" })).toEqual([
      { component: "delivery", msg: expect.stringContaining("PUBLIC_API_URL=http://api.acme.test is not https (no one-click unsubscribe header)") },
    ]);
  });

  it("warns from the gateway when it serves the network with such links, and says nothing once both are public https addresses or nothing leaves", async () => {
    expect(await start({}, "0.0.0.0")).toEqual([{ component: "gateway", msg: expect.stringContaining("PUBLIC_API_URL is not set") }]);
    // Sandbox (nothing leaves) on this machine only: the development default, quiet.
    expect(await start({})).toEqual([]);
    const publicHttps = { PUBLIC_API_URL: "https://api.acme.test", PREFERENCES_URL: "https://preferences.acme.test" };
    expect(await start({ EMAIL_PROVIDER: "smtp", ...publicHttps }, "0.0.0.0")).toEqual([]);
  });
});
