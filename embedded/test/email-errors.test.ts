import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@emailsvc/runtime";
import type { OpenApiDocument } from "../../services/gateway/src/openapi";
import { responseChecker, type TestResponse } from "../../services/gateway/test/support/harness";
import { SmtpSink } from "../../services/delivery/test/support/smtp-sink";
import { startPlatform, type RunningPlatform } from "../src/platform";

// Issue 6, defect 6 (delivery's part): an email's `error` showed internal text
// ("Maximum call stack size exceeded", from a template's render). Through the
// REST API an integrator now sees a stable, documented code, with the relay's
// reply (addresses removed) only where the relay refused; the internal detail
// stays in the logs and the operators' `last_error`.

const ADMIN = "email-errors-admin-token-0123456789";

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const mjml = (text: string) => `<mjml><mj-body><mj-section><mj-column><mj-text>${text}</mj-text></mj-column></mj-section></mj-body></mjml>`;

describe("why an email failed, through the REST API", () => {
  let platform: RunningPlatform;
  let sink: SmtpSink;
  let dataDir: string;
  let check: (method: string, path: string, res: TestResponse) => void;
  let key: string;

  async function call(method: string, path: string, body?: unknown): Promise<TestResponse> {
    const headers: Record<string, string> = path.startsWith("/admin/") ? { authorization: `Bearer ${ADMIN}` } : { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(platform.gatewayUrl + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    const response = { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : text, text };
    check(method, path, response);
    return response;
  }

  async function failed(id: string): Promise<Record<string, unknown>> {
    return until(async () => {
      const r = await call("GET", `/api/v1/emails/${id}`);
      return r.body.status === "failed" ? (r.body as Record<string, unknown>) : undefined;
    }, `email ${id} to fail`);
  }

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    dataDir = mkdtempSync(join(tmpdir(), "email-errors-"));
    platform = await startPlatform({
      dataDir,
      gatewayPort: 0,
      gatewayHost: "127.0.0.1",
      adminToken: ADMIN,
      env: { EMAIL_PROVIDER: "smtp", SMTP_URL: sink.url(), EMAIL_FROM: "Acme <hello@acme.test>" },
      logger: createLogger("e2e", "silent"),
    });
    check = responseChecker((await (await fetch(`${platform.gatewayUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument);
    const account = (await call("POST", "/admin/v1/accounts", { name: "Errors" })).body.id as string;
    key = (await call("POST", `/admin/v1/accounts/${account}/api-keys`, { mode: "live" })).body.key as string;
  });

  afterAll(async () => {
    await platform?.close();
    await sink?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("shows `template_render_failed`, not the renderer's own message, when a message cannot be rendered", async () => {
    // Valid when written; this email's variables make its render exceed a bound (10,201 iterations).
    const template = await call("POST", "/api/v1/templates", {
      name: "Grid",
      subject: "Grid",
      category: "transactional",
      mjml_content: mjml("{{#each rows}}{{#each ../rows}}x{{/each}}{{/each}}"),
    });
    expect(template.status).toBe(201);
    const sent = await call("POST", "/api/v1/emails/send", {
      template_slug: "grid",
      to: "grid@example.com",
      variables: { rows: Array.from({ length: 101 }, (_, i) => i) },
    });
    expect(sent.status).toBe(202);

    const email = await failed(sent.body.id as string);
    expect(email.error).toBe("template_render_failed");
    // Nothing internal: no exception class or message, no bound, no stack.
    expect(JSON.stringify(email)).not.toMatch(/Error|iterations|Maximum call stack|last_error/);
    expect(sink.to("grid@example.com")).toHaveLength(0);
  });

  it("shows `recipient_rejected: <the relay's reply>` without the address when the relay refuses the recipient", async () => {
    sink.rcptReplies.set("nobody@example.com", { code: 550, text: "5.1.1 <nobody@example.com>: Recipient address rejected: User unknown" });
    const template = await call("POST", "/api/v1/templates", { name: "Hello", subject: "Hello", category: "transactional", mjml_content: mjml("Hello") });
    expect(template.status).toBe(201);
    const sent = await call("POST", "/api/v1/emails/send", { template_slug: "hello", to: "nobody@example.com" });
    expect(sent.status).toBe(202);

    const email = await failed(sent.body.id as string);
    expect(email.error).toBe("recipient_rejected: 550 5.1.1 <recipient>: Recipient address rejected: User unknown");
  });
});
