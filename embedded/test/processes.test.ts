import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMPONENT_NAMES, SERVICES } from "@emailsvc/manifest";
import { freePort } from "@emailsvc/testing";

// The services as an operator runs them: each from its own script, in its own
// process, configured by environment. Proves they start alone, talk over the
// network, serve Prometheus metrics on their own port, keep personal data out
// of their logs and metrics, and drain on SIGTERM.

const root = join(__dirname, "..", "..");
const ADMIN = "standalone-admin-token-0123456789";

interface Proc {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

function run(script: string, env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [join(root, script)], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout!.on("data", (d) => output.push(String(d)));
  child.stderr!.on("data", (d) => output.push(String(d)));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, output, exited };
}

async function waitReady(url: string, proc: Proc): Promise<void> {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`exited early:\n${proc.output.join("")}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not ready: ${url}\n${proc.output.join("")}`);
}

describe("each service from its own script", () => {
  let dataDir: string;
  let subscribers: Proc;
  let templates: Proc;
  let delivery: Proc;
  let campaigns: Proc;
  let gateway: Proc;
  let gatewayUrl: string;
  const metricsPorts: Record<string, number> = {};

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "standalone-"));
    const grpcPort = await freePort();
    const templatesPort = await freePort();
    const deliveryPort = await freePort();
    const campaignsPort = await freePort();
    const httpPort = await freePort();
    for (const name of ["subscribers", "templates", "delivery", "campaigns", "gateway"]) metricsPorts[name] = await freePort();
    const metrics = (name: string) => ({ METRICS_PORT: String(metricsPorts[name]) });
    subscribers = run("services/subscribers/dist/main.js", { GRPC_PORT: String(grpcPort), DATA_DIR: dataDir, ...metrics("subscribers") });
    templates = run("services/templates/dist/main.js", { GRPC_PORT: String(templatesPort), DATA_DIR: dataDir, ...metrics("templates") });
    delivery = run("services/delivery/dist/main.js", {
      GRPC_PORT: String(deliveryPort),
      DATA_DIR: dataDir,
      ...metrics("delivery"),
      TEMPLATES_URL: `http://127.0.0.1:${templatesPort}`,
      SUBSCRIBERS_URL: `http://127.0.0.1:${grpcPort}`,
    });
    campaigns = run("services/campaigns/dist/main.js", {
      GRPC_PORT: String(campaignsPort),
      DATA_DIR: dataDir,
      ...metrics("campaigns"),
      SUBSCRIBERS_URL: `http://127.0.0.1:${grpcPort}`,
      TEMPLATES_URL: `http://127.0.0.1:${templatesPort}`,
    });
    gateway = run("services/gateway/dist/main.js", {
      GATEWAY_PORT: String(httpPort),
      GATEWAY_HOST: "127.0.0.1",
      SUBSCRIBERS_URL: `http://127.0.0.1:${grpcPort}`,
      TEMPLATES_URL: `http://127.0.0.1:${templatesPort}`,
      DELIVERY_URL: `http://127.0.0.1:${deliveryPort}`,
      CAMPAIGNS_URL: `http://127.0.0.1:${campaignsPort}`,
      ADMIN_TOKEN: ADMIN,
      DATA_DIR: dataDir,
      ...metrics("gateway"),
    });
    gatewayUrl = `http://127.0.0.1:${httpPort}`;
    await waitReady(`${gatewayUrl}/readyz`, gateway);
  });

  afterAll(async () => {
    for (const p of [gateway, subscribers, templates, delivery, campaigns]) if (p && p.child.exitCode === null) p.child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("serves the API, logs no personal data, and drains in-flight requests on SIGTERM", async () => {
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const account = (await (await fetch(`${gatewayUrl}/admin/v1/accounts`, { method: "POST", headers: admin, body: JSON.stringify({ name: "Ops" }) })).json()) as { id: string };
    const key = (
      (await (await fetch(`${gatewayUrl}/admin/v1/accounts/${account.id}/api-keys`, { method: "POST", headers: admin, body: JSON.stringify({ mode: "live" }) })).json()) as { key: string }
    ).key as string;
    const headers = { "x-api-key": key, "content-type": "application/json" };
    const created = await fetch(`${gatewayUrl}/api/v1/subscribers`, {
      method: "POST",
      headers,
      body: JSON.stringify({ email: "standalone-person@example.com", metadata: { city: "Zürich-private" } }),
    });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { id: string }).id).toMatch(/^sub_/);
    expect((await fetch(`${gatewayUrl}/api/v1/subscribers/by-email/standalone-person%40example.com`, { headers })).status).toBe(200);

    // Templates and delivery, each in its own process, through the gateway.
    const template = await fetch(`${gatewayUrl}/api/v1/templates`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "Receipt",
        subject: "Receipt for {{name}}",
        category: "transactional",
        mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Thanks {{name}}</mj-text></mj-column></mj-section></mj-body></mjml>",
      }),
    });
    expect(template.status).toBe(201);
    const send = await fetch(`${gatewayUrl}/api/v1/emails/send`, {
      method: "POST",
      headers,
      body: JSON.stringify({ template_slug: "receipt", to: "standalone-recipient@example.com", variables: { name: "Zürich-private" } }),
    });
    expect(send.status).toBe(202);
    const emailId = ((await send.json()) as { id: string }).id;
    const deadline = Date.now() + 15000;
    let status = "";
    while (status !== "sent" && Date.now() < deadline) {
      status = ((await (await fetch(`${gatewayUrl}/api/v1/emails/${emailId}`, { headers })).json()) as { status: string }).status;
      if (status !== "sent") await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe("sent");

    // Campaigns, in its own process, asking subscribers and templates in theirs.
    const templateId = ((await template.json()) as { id: string }).id;
    const campaign = await fetch(`${gatewayUrl}/api/v1/campaigns`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "Standalone", template_id: templateId, tag_filter: {} }),
    });
    expect(campaign.status).toBe(201);
    const campaignId = ((await campaign.json()) as { id: string }).id;
    expect(await (await fetch(`${gatewayUrl}/api/v1/campaigns/${campaignId}/recipient-count`, { headers })).json()).toEqual({ count: 1 });

    // Each process's own /metrics: requests by route or method and code, no personal data.
    const scrape = async (name: string) => (await fetch(`http://127.0.0.1:${metricsPorts[name]}/metrics`)).text();
    const scraped = Object.fromEntries(await Promise.all(Object.keys(metricsPorts).map(async (n) => [n, await scrape(n)] as const)));
    expect(scraped.gateway).toMatch(/http_requests_total\{method="POST",route="\/api\/v1\/emails\/send",status="202"\} 1/);
    expect(scraped.gateway).toMatch(/http_request_duration_seconds_bucket\{le="[0-9.]+",method="POST",route="\/api\/v1\/subscribers"\}/);
    expect(scraped.subscribers).toMatch(/rpc_server_requests_total\{rpc_service="emailsvc.subscribers.v1.SubscriberService",rpc_method="CreateSubscriber",code="ok"\} 1/);
    expect(scraped.templates).toMatch(/rpc_server_requests_total\{rpc_service="emailsvc.templates.v1.TemplateService",rpc_method="CreateTemplate",code="ok"\} 1/);
    expect(scraped.delivery).toMatch(/rpc_server_requests_total\{rpc_service="emailsvc.delivery.v1.DeliveryService",rpc_method="SendEmail",code="ok"\} 1/);
    expect(scraped.delivery).toMatch(/rpc_client_duration_seconds_count\{rpc_service="emailsvc.templates.v1.TemplateService",rpc_method="[A-Za-z]+",code="ok"\} [1-9]/);
    expect(scraped.campaigns).toMatch(/rpc_server_requests_total\{rpc_service="emailsvc.campaigns.v1.CampaignService",rpc_method="CreateCampaign",code="ok"\} 1/);
    expect(scraped.delivery).toMatch(/delivery_emails_total\{status="queued"\} 1/);
    expect(scraped.delivery).toMatch(/delivery_emails_total\{status="sent"\} 1/);
    expect(scraped.delivery).toMatch(/delivery_handoff_duration_seconds_count\{provider="sandbox",outcome="accepted"\} 1/);
    expect(scraped.delivery).toMatch(/events_handled_total\{topic="email.send.requested",group="delivery",outcome="handled"\} 1/);
    expect(scraped.delivery).toMatch(/event_consumer_lag\{topic="email.send.requested",group="delivery"\} 0/);
    expect(scraped.delivery).toMatch(/outbox_pending_documents\{service="delivery"\} 0/);
    expect(scraped.subscribers).toMatch(/outbox_pending_documents\{service="subscribers"\} 0/);
    for (const text of Object.values(scraped)) {
      expect(text).toContain("nodejs_eventloop_lag_seconds");
      expect(text).not.toMatch(/standalone-|Zürich|acc_/);
    }

    // A burst of creates, with SIGTERM sent to both processes while they are in flight.
    const burst = Array.from({ length: 40 }, (_, i) =>
      fetch(`${gatewayUrl}/api/v1/subscribers`, { method: "POST", headers, body: JSON.stringify({ email: `burst${i}@example.com` }) }).then(
        (r) => r.status,
        () => "refused" as const,
      ),
    );
    await new Promise((r) => setTimeout(r, 5));
    gateway.child.kill("SIGTERM");
    const statuses = await Promise.all(burst);
    for (const p of [subscribers, templates, delivery, campaigns]) p.child.kill("SIGTERM");
    expect(await gateway.exited).toBe(0);
    expect(await subscribers.exited).toBe(0);
    expect(await templates.exited).toBe(0);
    expect(await delivery.exited).toBe(0);
    expect(await campaigns.exited).toBe(0);

    // Every request was either completed or never accepted: none failed midway.
    for (const s of statuses) expect([201, "refused"]).toContain(s);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(0);

    const logs = [gateway, subscribers, templates, delivery, campaigns].map((p) => p.output.join("")).join("");
    expect(logs).not.toContain("standalone-person"); // addresses and metadata never
    expect(logs).not.toContain("Zürich-private");
    expect(logs).not.toContain("standalone-recipient");
    expect(logs).not.toContain(key);
    expect(logs).toContain("draining");
    for (const line of logs.split("\n").filter((l) => l.trim())) expect(() => JSON.parse(line)).not.toThrow();
  });

  it("keeps under DATA_DIR only what the services' manifests declare", () => {
    // Each alone on the embedded store: its datafiles, its bus' log and development keys (packages/manifest, data.dataDir).
    const declared = new Set<string>(COMPONENT_NAMES.flatMap((name) => SERVICES[name].data.dataDir));
    const kept = readdirSync(dataDir).flatMap((top) =>
      top === "bus" || top === "secrets"
        ? readdirSync(join(dataDir, top)).map((entry) => `${top}/${entry}${statSync(join(dataDir, top, entry)).isDirectory() ? "/" : ""}`)
        : [`${top}${statSync(join(dataDir, top)).isDirectory() ? "/" : ""}`],
    );
    expect(kept).toEqual(expect.arrayContaining(["subscribers/", "bus/subscribers/", "bus/delivery/", "bus/campaigns/"]));
    expect(kept.filter((part) => !declared.has(part))).toEqual([]);
  });
});
