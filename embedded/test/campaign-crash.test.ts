import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";

// kill -9 in the middle of a campaign, over real Kafka and the
// MongoDB-compatible server: the platform process (campaigns and delivery in
// it) dies without a chance to write anything, starts again, and every
// recipient gets the campaign exactly once (one email record and one message
// at the provider per recipient; the ledger says sent for each).

const root = join(__dirname, "..", "..");
const ADMIN = "crash-admin-token-0123456789abcdef";
const RECIPIENTS = 120;
const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";

interface Proc {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

const kafka = process.env.KAFKA_BROKERS;
const mongo = process.env.MONGO_URL;

describe("a campaign across kill -9 (Kafka, MongoDB-compatible store)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "campaign-crash-"));
  let port = 0;
  let proc: Proc | undefined;
  let key = "";
  const env = () => ({
    PATH: process.env.PATH ?? "",
    LOG_LEVEL: "warn",
    DATA_DIR: dataDir,
    GATEWAY_PORT: String(port),
    METRICS_PORT: "0",
    ADMIN_TOKEN: ADMIN,
    MONGO_URL: mongo!,
    KAFKA_BROKERS: kafka!,
    TOKEN_SIGNING_KEYS: "k1:crash-test-signing-key-0123456789abcdef-0123",
    OUTBOX_SWEEP_INTERVAL_MS: "500",
    // 40 a second: the send lasts about three seconds, time to kill it midway.
    CAMPAIGN_RATE: "40/1s",
    ...GENEROUS_RATE_LIMIT_ENV,
  });
  // Topics and groups of this test alone: other suites share the cluster.
  const namespace = `crash${Date.now().toString(36)}`;

  function start(): Proc {
    const child = spawn(process.execPath, [join(root, "embedded", "dist", "main.js")], { env: { ...env(), KAFKA_NAMESPACE: namespace }, stdio: ["ignore", "pipe", "pipe"] });
    const output: string[] = [];
    child.stdout!.on("data", (d) => output.push(String(d)));
    child.stderr!.on("data", (d) => output.push(String(d)));
    return { child, output, exited: new Promise((resolve) => child.on("exit", (code) => resolve(code))) };
  }

  async function ready(p: Proc): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (p.child.exitCode !== null) throw new Error(`the platform exited:\n${p.output.join("")}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the platform did not become ready:\n${p.output.join("")}`);
  }

  async function call(method: string, path: string, body?: unknown, admin = false): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = admin ? { authorization: `Bearer ${ADMIN}` } : { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  beforeAll(async () => {
    if (!kafka || !mongo) throw new Error("KAFKA_BROKERS and MONGO_URL are not set: run the tests through `npm test`, whose setup starts Kafka and FerretDB");
    port = await freePort();
    proc = start();
    await ready(proc);
  }, 120_000);

  afterAll(async () => {
    if (proc && proc.child.exitCode === null) {
      proc.child.kill("SIGTERM");
      await proc.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("sends to every recipient exactly once when the process is killed mid-campaign and started again", async () => {
    const account = await call("POST", "/admin/v1/accounts", { name: "Crash" }, true);
    key = (await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "test" }, true)).body.key;
    expect((await call("POST", "/api/v1/tags", { name: "everyone" })).status).toBe(201);
    const template = await call("POST", "/api/v1/templates", { name: "Crash", subject: "For {{metadata.name}}", category: "marketing", mjml_content: MJML });
    expect(template.status).toBe(201);
    for (let i = 0; i < RECIPIENTS; i += 20) {
      const made = await Promise.all(
        Array.from({ length: 20 }, (_, j) => call("POST", "/api/v1/subscribers", { email: `r${i + j}@example.com`, tags: ["everyone"], metadata: { name: `R${i + j}` } })),
      );
      expect(made.map((m) => m.status)).toEqual(Array(20).fill(201));
    }
    const campaign = await call("POST", "/api/v1/campaigns", { name: "Crash", template_id: template.body.id, tag_filter: { include_tags: ["everyone"] } });
    const id = campaign.body.id as string;
    const sent = await call("POST", `/api/v1/campaigns/${id}/send`);
    expect(sent.body.total_recipients).toBe(RECIPIENTS);

    // Midway: some sent, most not.
    let counts = sent.body.counts;
    for (let i = 0; i < 600 && counts.sent < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      counts = (await call("GET", `/api/v1/campaigns/${id}`)).body.counts;
    }
    expect(counts.sent).toBeGreaterThanOrEqual(20);
    expect(counts.sent).toBeLessThan(RECIPIENTS);
    proc!.child.kill("SIGKILL");
    await proc!.exited;

    proc = start();
    await ready(proc);
    let done = (await call("GET", `/api/v1/campaigns/${id}`)).body;
    for (let i = 0; i < 1200 && done.status !== "sent"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      done = (await call("GET", `/api/v1/campaigns/${id}`)).body;
    }
    expect(done.status).toBe("sent");
    expect(done.counts).toMatchObject({ total: RECIPIENTS, sent: RECIPIENTS, pending: 0, queued: 0, failed: 0, skipped: 0 });

    // Exactly once: one email per recipient, each handed to the provider once (one kept message each).
    const emails: Array<{ id: string; to: string; status: string }> = [];
    let cursor = "";
    for (;;) {
      const page = await call("GET", `/api/v1/emails?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      emails.push(...page.body.items);
      if (!page.body.next_cursor) break;
      cursor = page.body.next_cursor;
    }
    expect(emails).toHaveLength(RECIPIENTS);
    expect(new Set(emails.map((e) => e.to)).size).toBe(RECIPIENTS);
    expect(emails.every((e) => e.status === "sent")).toBe(true);
    for (const email of emails.slice(0, 10)) expect((await call("GET", `/api/v1/emails/${email.id}/sandbox`)).status).toBe(200);
  }, 300_000);
});
