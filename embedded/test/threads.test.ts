import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startNodeProcess, startPlatformProcess, type PlatformProcess } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";

// `npm start` runs delivery and campaigns each in a worker thread of its own
// (EMBEDDED_THREADS, default "delivery,campaigns"), the other services on the
// main thread. Seen from outside it is one process as before: one API, one
// /metrics port serving every thread's metrics once, JSON logs from every
// thread without personal data, one drain on SIGTERM. (The kill -9 test in
// campaign-crash.test.ts runs on this default too.)

const root = join(__dirname, "..", "..");
const ADMIN = "threads-admin-token-0123456789abcdef";

describe("npm start with services in worker threads", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "threads-"));
  let proc: PlatformProcess | undefined;
  let metricsPort = 0;

  beforeAll(async () => {
    metricsPort = await freePort();
    proc = await startPlatformProcess(root, { DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, METRICS_PORT: String(metricsPort), LOG_LEVEL: "info", ...GENEROUS_RATE_LIMIT_ENV });
  }, 120_000);

  afterAll(async () => {
    await proc?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function call(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = key ? { "x-api-key": key } : { authorization: `Bearer ${ADMIN}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${proc!.url}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  it("sends mail and a campaign, serves every thread's metrics once, and drains on SIGTERM", async () => {
    const account = await call("POST", "/admin/v1/accounts", { name: "Threads" });
    const key = (await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "test" })).body.key as string;
    const subscriber = await call("POST", "/api/v1/subscribers", { email: "thread-person@example.com", tags: ["news"], metadata: { city: "Thread-City" } }, key);
    expect(subscriber.status).toBe(201);
    const template = await call("POST", "/api/v1/templates", { name: "T", slug: "thread-news", subject: "Hi {{metadata.city}}", category: "marketing", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>" }, key);
    expect(template.status).toBe(201);

    // Transactional: the gateway (main thread) asks delivery (its thread), which asks templates and subscribers (main thread).
    const email = await call("POST", "/api/v1/emails/send", { template_slug: "thread-news", to: "thread-person@example.com" }, key);
    expect(email.status).toBe(202);
    let status = "";
    for (let i = 0; i < 200 && status !== "sent"; i++) {
      status = (await call("GET", `/api/v1/emails/${email.body.id}`, undefined, key)).body.status;
      if (status !== "sent") await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe("sent");

    // A campaign: campaigns (its thread) hands over on the main thread's bus, delivery (its thread) consumes.
    const campaign = await call("POST", "/api/v1/campaigns", { name: "C", template_id: template.body.id, tag_filter: { include_tags: ["news"] } }, key);
    expect((await call("POST", `/api/v1/campaigns/${campaign.body.id}/send`, undefined, key)).body.total_recipients).toBe(1);
    let done = { status: "", counts: {} };
    for (let i = 0; i < 300 && done.status !== "sent"; i++) {
      done = (await call("GET", `/api/v1/campaigns/${campaign.body.id}`, undefined, key)).body;
      if (done.status !== "sent") await new Promise((r) => setTimeout(r, 50));
    }
    expect(done).toMatchObject({ status: "sent", counts: { total: 1, sent: 1 } });

    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    // From the delivery thread, the campaigns thread and the main thread, each metric family once.
    expect(metrics).toMatch(/delivery_emails_total\{status="sent"\} 2/);
    expect(metrics).toMatch(/rpc_server_requests_total\{rpc_service="emailsvc.campaigns.v1.CampaignService",rpc_method="CreateCampaign",code="ok"\} 1/);
    expect(metrics).toMatch(/rpc_server_requests_total\{rpc_service="emailsvc.subscribers.v1.SubscriberService",rpc_method="CreateSubscriber",code="ok"\} 1/);
    expect(metrics).toMatch(/events_handled_total\{topic="email.send.requested",group="delivery",outcome="handled"\} [1-9]/);
    for (const family of ["delivery_emails_total", "rpc_server_requests_total", "nodejs_eventloop_lag_seconds"]) {
      expect(metrics.split("\n").filter((line) => line.startsWith(`# TYPE ${family} `))).toHaveLength(1);
    }
    expect(metrics).not.toMatch(/thread-person|Thread-City|acc_/);

    await proc!.stop();
    expect(await proc!.exited).toBe(0);
    const logs = proc!.output.join("");
    const lines = logs.split("\n").filter((l) => l.trim());
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    // The threads log as the services they are (components of the one process), and drain with it.
    const components = new Set(lines.map((l) => (JSON.parse(l) as { component?: string }).component));
    for (const component of ["delivery", "campaigns", "subscribers"]) expect(components.has(component)).toBe(true);
    expect(lines.some((l) => l.includes('"msg":"draining"'))).toBe(true);
    expect(logs).not.toContain("thread-person");
    expect(logs).not.toContain("Thread-City");
    expect(logs).not.toContain(key);
  }, 120_000);

  it("refuses an EMBEDDED_THREADS that names no service, naming the setting", async () => {
    const other = mkdtempSync(join(tmpdir(), "threads-bad-"));
    try {
      const bad = await startNodeProcess(root, join("embedded", "dist", "main.js"), { DATA_DIR: other, ADMIN_TOKEN: ADMIN, EMBEDDED_THREADS: "delivery,mailer", GATEWAY_PORT: "0", PORTAL_PORT: "0" });
      expect(await bad.exited).toBe(1);
      const fatal = JSON.parse(bad.output.join("").trim().split("\n").at(-1)!) as { level: string; msg: string };
      expect(fatal).toMatchObject({ level: "fatal", msg: expect.stringMatching(/^EMBEDDED_THREADS: "mailer" is not a service/) });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
