import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@emailsvc/telemetry";
import type { OpenApiDocument } from "../../services/gateway/src/openapi";
import { responseChecker, sendChecked, type TestResponse } from "../../services/gateway/test/support/harness";
import { freePort, SmtpSink } from "@emailsvc/testing";
import { startPlatform, type RunningPlatform } from "../src/platform";

// Templates and transactional sending end to end, as an integrator does it:
// REST → gateway → templates/delivery over gRPC → queue → SMTP. The mail really
// arrives at an SMTP server (npm smtp-server) and is read back with mailparser.

const ADMIN = "email-e2e-admin-token-0123456789";

const WELCOME = `<mjml>
  <mj-head><mj-title>Welcome</mj-title></mj-head>
  <mj-body>
    <mj-section background-color="{{brand_color}}">
      <mj-column>
        <mj-text font-size="20px">Hello {{first_name}}!</mj-text>
        <mj-text>Your plan: {{metadata.plan}}. Reach us at {{email}}.</mj-text>
        <mj-button href="{{cta_url}}">Get started</mj-button>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("templates and sending end to end (embedded, SMTP)", () => {
  let platform: RunningPlatform;
  let sink: SmtpSink;
  let dataDir: string;
  let check: (method: string, path: string, res: TestResponse) => void;
  let liveKey: string;
  let testKey: string;
  let otherKey: string;

  async function call(method: string, path: string, opts: { key?: string; body?: unknown; admin?: boolean; headers?: Record<string, string> } = {}): Promise<TestResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.admin) headers.authorization = `Bearer ${ADMIN}`;
    else headers["x-api-key"] = opts.key ?? liveKey;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    return sendChecked(check, platform.gatewayUrl, method, path, { headers, body });
  }

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    dataDir = mkdtempSync(join(tmpdir(), "email-e2e-"));
    platform = await startPlatform({
      dataDir,
      gatewayPort: 0,
      gatewayHost: "127.0.0.1",
      adminToken: ADMIN,
      env: {
        PORTAL_PORT: String(await freePort()),
        EMAIL_PROVIDER: "smtp",
        SMTP_URL: sink.url(),
        EMAIL_FROM: "Acme <hello@acme.test>",
        OUTBOX_SWEEP_INTERVAL_MS: "200",
        // Links in mail name the gateway as the world reaches it (here: behind a TLS proxy).
        PUBLIC_API_URL: "https://api.acme.test",
      },
      logger: createLogger("e2e", "silent"),
    });
    check = responseChecker((await (await fetch(`${platform.gatewayUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument);
    const account = (await call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Acme" } })).body.id as string;
    liveKey = (await call("POST", `/admin/v1/accounts/${account}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    testKey = (await call("POST", `/admin/v1/accounts/${account}/api-keys`, { admin: true, body: { mode: "test" } })).body.key;
    const other = (await call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Other" } })).body.id as string;
    otherKey = (await call("POST", `/admin/v1/accounts/${other}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
  });

  afterAll(async () => {
    await platform?.close();
    await sink?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("creates a template, previews it, sends it, and the mail arrives over SMTP filled and escaped", async () => {
    const created = await call("POST", "/api/v1/templates", {
      body: { name: "Welcome email", subject: "Welcome, {{first_name}}!", mjml_content: WELCOME, category: "transactional" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ slug: "welcome-email", version: 1, category: "transactional" });
    expect(created.body.variables).toEqual(expect.arrayContaining(["first_name", "cta_url", "brand_color", "metadata.plan", "email"]));

    const preview = await call("POST", `/api/v1/templates/${created.body.id}/preview`, { body: { variables: { first_name: "<Ada>" } } });
    expect(preview.status).toBe(200);
    expect(preview.body.html).toContain("Hello &lt;Ada&gt;!");
    expect(preview.body.subject).toBe("Welcome, <Ada>!");
    expect(preview.body.missing_variables).toEqual(expect.arrayContaining(["cta_url", "brand_color"]));

    const sent = await call("POST", "/api/v1/emails/send", {
      body: {
        template_slug: "welcome-email",
        to: "ada@example.com",
        variables: { first_name: "Ada <b>Lovelace</b>", cta_url: "https://acme.test/start?a=1&b=2", brand_color: "#ffeedd", metadata: { plan: "pro" } },
      },
    });
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ status: "queued" });
    const id = sent.body.id as string;

    const email = await until(async () => {
      const r = await call("GET", `/api/v1/emails/${id}`);
      return r.body.status === "sent" ? r.body : undefined;
    }, "the email to be sent");
    expect(email.sent_at).toBeTruthy();
    expect(email.template_version).toBe(1);

    const [mail] = sink.to("ada@example.com");
    expect(mail).toBeDefined();
    expect(mail!.parsed.subject).toBe("Welcome, Ada <b>Lovelace</b>!");
    expect(mail!.parsed.from?.text).toContain("hello@acme.test");
    expect(mail!.parsed.messageId).toBe(email.message_id);
    const html = String(mail!.parsed.html);
    expect(html).toContain("Hello Ada &lt;b&gt;Lovelace&lt;/b&gt;!");
    expect(html).not.toContain("<b>Lovelace</b>");
    expect(html).toContain("#ffeedd");
    expect(html).toContain("Your plan: pro.");
    expect(mail!.parsed.text).toContain("Hello Ada <b>Lovelace</b>!");
    expect(mail!.parsed.text).toContain("Get started");
  });

  it("replays an idempotent send without a second mail, and refuses the key with another body", async () => {
    const body = { template_slug: "welcome-email", to: "grace@example.com", variables: { first_name: "Grace" }, idempotency_key: "order-42" };
    const [a, b, c] = await Promise.all([call("POST", "/api/v1/emails/send", { body }), call("POST", "/api/v1/emails/send", { body }), call("POST", "/api/v1/emails/send", { body })]);
    expect(new Set([a.body.id, b.body.id, c.body.id]).size).toBe(1);
    expect([a, b, c].filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(2);
    await until(async () => ((await call("GET", `/api/v1/emails/${a.body.id}`)).body.status === "sent" ? true : undefined), "sent");
    const again = await call("POST", "/api/v1/emails/send", { body });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(a.body);
    const conflict = await call("POST", "/api/v1/emails/send", { body: { ...body, variables: { first_name: "Someone else" } } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe("idempotency_key_reused");
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.to("grace@example.com")).toHaveLength(1);
  });

  it("keeps test-mode mail in the sandbox, where a developer can read it", async () => {
    const sent = await call("POST", "/api/v1/emails/send", { key: testKey, body: { template_slug: "welcome-email", to: "sandboxed@example.com", variables: { first_name: "Sam" } } });
    // Templates belong to a tenant: the live key's template is unknown in test mode.
    expect(sent.status).toBe(404);
    await call("POST", "/api/v1/templates", { key: testKey, body: { name: "Welcome email", subject: "Hi {{first_name}}", mjml_content: WELCOME, category: "transactional" } });
    const queued = await call("POST", "/api/v1/emails/send", { key: testKey, body: { template_slug: "welcome-email", to: "sandboxed@example.com", variables: { first_name: "Sam" } } });
    expect(queued.status).toBe(202);
    const message = await until(async () => {
      const r = await call("GET", `/api/v1/emails/${queued.body.id}/sandbox`, { key: testKey });
      return r.status === 200 ? r.body : undefined;
    }, "the sandboxed message");
    expect(message).toMatchObject({ to: expect.stringContaining("sandboxed@example.com"), subject: "Hi Sam" });
    expect(message.html).toContain("Hello Sam!");
    expect(message.text).toContain("Hello Sam!");
    expect(sink.to("sandboxed@example.com")).toHaveLength(0);
  });

  // Issue 6, defect 6: an email's `error` showed the renderer's internal text
  // ("Maximum call stack size exceeded"). It is a stable code now, with the
  // relay's reply (addresses removed) where there is one; the detail stays in
  // the logs and the operators' last_error.
  it("fails an email with a stable public reason: never the renderer's internal text, the relay's reply without the address", async () => {
    const created = await call("POST", "/api/v1/templates", {
      body: {
        name: "Line items",
        subject: "Your items",
        category: "transactional",
        mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>{{#each items}}<p>{{this}}</p>{{/each}}</mj-text></mj-column></mj-section></mj-body></mjml>",
      },
    });
    expect(created.status).toBe(201);
    // More {{#each}} iterations than one message may render: the render fails at send time.
    const tooMany = await call("POST", "/api/v1/emails/send", {
      body: { template_slug: "line-items", to: "items@example.com", variables: { items: Array.from({ length: 10_001 }, () => 1) } },
    });
    expect(tooMany.status).toBe(202);
    const failed = await until(async () => {
      const r = await call("GET", `/api/v1/emails/${tooMany.body.id}`);
      return r.body.status === "failed" ? r : undefined;
    }, "the email to fail");
    expect(failed.body.error).toBe("template_render_failed");
    expect(failed.text).not.toMatch(/iterations|exceeded|RenderLimitError|last_error/);

    sink.rcptReplies.set("nobody@example.com", { code: 550, text: "5.1.1 <nobody@example.com>: Recipient address rejected: User unknown" });
    const rejected = await call("POST", "/api/v1/emails/send", {
      body: { template_slug: "line-items", to: "nobody@example.com", variables: { items: [1] } },
    });
    const refused = await until(async () => {
      const r = await call("GET", `/api/v1/emails/${rejected.body.id}`);
      return r.body.status === "bounced" ? r : undefined;
    }, "the email to bounce");
    expect(refused.body.error).toBe("recipient_rejected: 550 5.1.1 <recipient>: Recipient address rejected: User unknown");
    expect(refused.body.bounce).toEqual({ type: "hard", diagnostic: "550 5.1.1 <recipient>: Recipient address rejected: User unknown" });
    expect(sink.to("items@example.com")).toHaveLength(0);
  });

  it("answers bad input with a clear problem and sends nothing", async () => {
    const before = sink.messages.length;
    const cases: Array<[unknown, number, string]> = [
      [{ template_slug: "no-such-template", to: "x@example.com" }, 404, "template_not_found"],
      [{ template_slug: "welcome-email", to: "not-an-address" }, 400, "validation_failed"],
      [{ template_slug: "welcome-email", to: "x@example.com", variables: ["not", "an", "object"] }, 400, "validation_failed"],
      [{ template_slug: "welcome-email", to: "x@example.com", variables: { big: "x".repeat(70 * 1024) } }, 413, "variables_too_large"],
    ];
    for (const [body, status, code] of cases) {
      const res = await call("POST", "/api/v1/emails/send", { body });
      expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
    }
    // Another tenant's template is not there for them.
    const foreign = await call("POST", "/api/v1/emails/send", { key: otherKey, body: { template_slug: "welcome-email", to: "x@example.com" } });
    expect(foreign.status).toBe(404);
    const invalid = await call("POST", "/api/v1/templates", {
      body: { name: "Broken", subject: "x", mjml_content: "<mjml>\n<mj-body>\n<mj-section>\n<mj-colum></mj-colum>\n</mj-section>\n</mj-body>\n</mjml>", category: "marketing" },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.code).toBe("invalid_mjml");
    expect(JSON.stringify(invalid.body.errors)).toMatch(/line 4/);
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.messages.length).toBe(before);
  });

  it("fills email and metadata.* of a subscriber recipient without the caller passing them; the caller's variables win", async () => {
    await call("POST", "/api/v1/subscribers", { body: { email: "member@example.com", metadata: { plan: "gold" } } });
    const sendTo = async (variables: Record<string, unknown>, to = "member@example.com") => {
      const sent = await call("POST", "/api/v1/emails/send", { body: { template_slug: "welcome-email", to, variables } });
      expect(sent.status).toBe(202);
      await until(async () => ((await call("GET", `/api/v1/emails/${sent.body.id}`)).body.status === "sent" ? true : undefined), "sent");
    };
    await sendTo({ first_name: "Mo" });
    await sendTo({ first_name: "Mo", metadata: { plan: "override" } });
    const [first, second] = sink.to("member@example.com");
    expect(String(first!.parsed.html)).toContain("Your plan: gold. Reach us at member@example.com.");
    expect(String(second!.parsed.html)).toContain("Your plan: override.");
    // A recipient who is no subscriber gets no metadata (and no error).
    await sendTo({ first_name: "Stranger" }, "stranger@example.com");
    expect(String(sink.to("stranger@example.com")[0]!.parsed.html)).toContain("Your plan: . Reach us at stranger@example.com.");
  });

  it("gives marketing mail a one-click List-Unsubscribe that works, and sends no more marketing mail after it", async () => {
    const NEWS = "<mjml><mj-body><mj-section><mj-column><mj-text>News for {{email}}</mj-text><mj-button href=\"{{unsubscribe_url}}\">Unsubscribe</mj-button></mj-column></mj-section></mj-body></mjml>";
    expect((await call("POST", "/api/v1/templates", { body: { name: "News", slug: "news", subject: "News", mjml_content: NEWS, category: "marketing" } })).status).toBe(201);
    const reader = (await call("POST", "/api/v1/subscribers", { body: { email: "reader@example.com" } })).body.id as string;
    const send = async (slug: string, to: string) => {
      const sent = await call("POST", "/api/v1/emails/send", { body: { template_slug: slug, to } });
      expect(sent.status).toBe(202);
      return until(async () => {
        const r = await call("GET", `/api/v1/emails/${sent.body.id}`);
        return r.body.status === "queued" ? undefined : r.body;
      }, "the email to be settled");
    };
    // The raw header lines (mailparser folds List-* headers into its own structure).
    const header = (mail: { parsed: { headerLines: ReadonlyArray<{ key: string; line: string }> } }, name: string) =>
      mail.parsed.headerLines.find((h) => h.key === name)?.line.replace(/^[^:]+:\s*/, "").replace(/\r?\n\s+/g, "");
    const linkOf = (to: string, index = 0) => {
      const mail = sink.to(to)[index]!;
      const listUnsubscribe = header(mail, "list-unsubscribe") ?? "";
      expect(listUnsubscribe).toMatch(/^<https:\/\/api\.acme\.test\/unsubscribe\?token=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+>$/);
      expect(header(mail, "list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
      expect(header(mail, "list-id")).toMatch(/^<acc_[0-9a-z]{26}\.live\.acme\.test>$/);
      const url = new URL(listUnsubscribe.slice(1, -1));
      // The body's {{unsubscribe_url}} is the same link (Handlebars escapes its `=` in the href).
      expect(String(mail.parsed.html)).toContain(url.searchParams.get("token")!);
      expect(url.search).not.toContain("reader");
      return `/unsubscribe${url.search}`;
    };
    const oneClick = (path: string) =>
      fetch(platform.gatewayUrl + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });

    expect((await send("news", "reader@example.com")).status).toBe("sent");
    expect((await oneClick(linkOf("reader@example.com"))).status).toBe(200);
    expect((await call("GET", `/api/v1/subscribers/${reader}`)).body.status).toBe("unsubscribed");
    // Marketing mail stops; transactional mail still goes.
    const suppressed = await send("news", "reader@example.com");
    expect(suppressed).toMatchObject({ status: "suppressed", error: "recipient_unsubscribed" });
    expect(sink.to("reader@example.com")).toHaveLength(1);
    expect((await send("welcome-email", "reader@example.com")).status).toBe("sent");
    expect(header(sink.to("reader@example.com")[1]!, "list-unsubscribe")).toBeUndefined();

    // An address that was no subscriber: the link keeps it as an unsubscribed one (the suppression).
    expect((await send("news", "passerby@example.com")).status).toBe("sent");
    expect((await oneClick(linkOf("passerby@example.com"))).status).toBe(200);
    expect((await call("GET", "/api/v1/subscribers/by-email/passerby@example.com")).body.status).toBe("unsubscribed");
    expect((await send("news", "passerby@example.com")).error).toBe("recipient_unsubscribed");
  });

  it("keeps the queued version when the template changes", async () => {
    const tpl = await call("POST", "/api/v1/templates", { body: { name: "Versioned", subject: "v1 {{n}}", mjml_content: WELCOME, category: "transactional" } });
    const updated = await call("PATCH", `/api/v1/templates/${tpl.body.id}`, { body: { subject: "v2 {{n}}" } });
    expect(updated.body.version).toBe(2);
    const sent = await call("POST", "/api/v1/emails/send", { body: { template_slug: tpl.body.slug, to: "ver@example.com", variables: { n: "x" } } });
    const email = await until(async () => {
      const r = await call("GET", `/api/v1/emails/${sent.body.id}`);
      return r.body.status === "sent" ? r.body : undefined;
    }, "sent");
    expect(email.template_version).toBe(2);
    expect(sink.to("ver@example.com")[0]!.parsed.subject).toBe("v2 x");
  });
});
