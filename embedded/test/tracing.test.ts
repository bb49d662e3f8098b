import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@emailsvc/testing";
import { OtlpReceiver, type ReceivedSpan } from "./support/otlp-receiver";

// One send traced end to end, as an operator sees it: `npm start`'s process
// with OTEL_EXPORTER_OTLP_ENDPOINT set exports over OTLP/HTTP; the REST
// request, every gRPC hop (through the runtime's fast paths), the event bus
// (the trace context kept in the outbox entry, then in the event's headers)
// and the hand-off to the provider belong to one trace; every log line of the
// request carries its trace id; and nothing exported holds an address or a
// variable.

const root = join(__dirname, "..", "..");
const ADMIN = "tracing-admin-token-0123456789abc";
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

let receiver: OtlpReceiver;
let child: ChildProcess;
let output: string[];
let gateway: string;
let dataDir: string;

beforeAll(async () => {
  receiver = new OtlpReceiver();
  const endpoint = await receiver.start();
  dataDir = mkdtempSync(join(tmpdir(), "tracing-"));
  const port = await freePort();
  gateway = `http://127.0.0.1:${port}`;
  output = [];
  child = spawn(process.execPath, [join(root, "embedded", "dist", "main.js")], {
    env: {
      PATH: process.env.PATH ?? "",
      DATA_DIR: dataDir,
      GATEWAY_PORT: String(port),
      PORTAL_PORT: "0",
      GATEWAY_HOST: "127.0.0.1",
      METRICS_PORT: "0",
      ADMIN_TOKEN: ADMIN,
      LOG_LEVEL: "info",
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => output.push(String(d)));
  child.stderr!.on("data", (d) => output.push(String(d)));
  await until(async () => (await fetch(`${gateway}/readyz`).catch(() => undefined))?.status === 200, "the platform to be ready");
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the platform exited:\n${output.join("")}`);
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`${gateway}${path}`, {
    method,
    headers: { ...headers, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, requestId: res.headers.get("x-request-id") ?? "" };
}

describe("a send, traced", () => {
  it("is one trace from the REST request through the gRPC hops, in the logs too, with no personal data", async () => {
    const admin = { authorization: `Bearer ${ADMIN}` };
    const account = await call("POST", "/admin/v1/accounts", admin, { name: "Traced" });
    const key = (await call("POST", `/admin/v1/accounts/${String(account.body.id)}/api-keys`, admin, { mode: "test" })).body.key as string;
    const api = { "x-api-key": key };
    await call("POST", "/api/v1/subscribers", api, { email: "traced-person@example.com", metadata: { secret_city: "Traced-Zurich" } });
    expect(
      (
        await call("POST", "/api/v1/templates", api, {
          name: "Receipt",
          slug: "receipt",
          subject: "Receipt {{order}}",
          category: "transactional",
          mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Order {{order}}</mj-text></mj-column></mj-section></mj-body></mjml>",
        })
      ).status,
    ).toBe(201);
    const sent = await call("POST", "/api/v1/emails/send", api, {
      template_slug: "receipt",
      to: "traced-person@example.com",
      variables: { order: "Traced-Order-4711" },
    });
    expect(sent.status).toBe(202);
    await until(async () => (await call("GET", `/api/v1/emails/${String(sent.body.id)}`, api)).body.status === "sent", "the email to be sent");

    // The request's root span, then its whole tree.
    let root: ReceivedSpan | undefined;
    await until(async () => {
      root = receiver.spans.find((s) => s.kind === SERVER && s.name === "POST /api/v1/emails/send");
      // A parent span ends (and is exported) after its children, possibly in a later export batch:
      // wait for the consumer span that encloses the hand-off as well as the hand-off itself.
      const names = new Set(receiver.spans.filter((s) => s.traceId === root?.traceId).map((s) => s.name));
      return root !== undefined && names.has("sandbox send") && names.has("email.send.requested process");
    }, "the spans of the send, down to the hand-off");
    const trace = receiver.spans.filter((s) => s.traceId === root!.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const childOf = (span: ReceivedSpan, name: string, kind: number) =>
      trace.find((s) => s.parentSpanId === span.spanId && s.name === name && s.kind === kind);

    expect(root!.attributes).toMatchObject({ "http.route": "/api/v1/emails/send", "http.response.status_code": 202, "emailsvc.mode": "test" });
    const sendClient = childOf(root!, "emailsvc.delivery.v1.DeliveryService/SendEmail", CLIENT);
    expect(sendClient).toBeDefined();
    const sendServer = childOf(sendClient!, "emailsvc.delivery.v1.DeliveryService/SendEmail", SERVER);
    expect(sendServer?.attributes).toMatchObject({ "rpc.system": "grpc", "emailsvc.account_id": String(account.body.id) });
    // Delivery's own calls (the template by slug, the recipient's subscriber) are its children, across two more hops.
    const hops = trace.filter((s) => s.kind === CLIENT && s.parentSpanId === sendServer!.spanId).map((s) => s.name);
    expect(hops).toEqual(expect.arrayContaining(["emailsvc.templates.v1.TemplateService/GetCompiledTemplate", "emailsvc.subscribers.v1.AudienceService/GetRecipientByEmail"]));
    for (const hop of trace.filter((s) => s.kind === CLIENT && s.parentSpanId === sendServer!.spanId)) {
      expect(trace.some((s) => s.kind === SERVER && s.parentSpanId === hop.spanId && s.name === hop.name)).toBe(true);
    }
    // The send request went through the outbox and the bus: the consumer continues the trace of SendEmail.
    const consumer = childOf(sendServer!, "email.send.requested process", CONSUMER);
    expect(consumer?.attributes).toMatchObject({ "messaging.destination.name": "email.send.requested", "emailsvc.key": String(sent.body.id) });
    expect(childOf(consumer!, "emailsvc.templates.v1.TemplateService/GetCompiledTemplate", CLIENT)).toBeDefined();
    const handoff = childOf(consumer!, "sandbox send", CLIENT);
    expect(handoff?.attributes).toMatchObject({ "emailsvc.email_id": String(sent.body.id), "emailsvc.provider": "sandbox" });
    for (const span of trace) if (span.parentSpanId) expect(byId.has(span.parentSpanId) || span === root).toBe(true);
    // The trace, as text, for the README (TRACE_TEST_PRINT=1).
    if (process.env.TRACE_TEST_PRINT === "1") console.log(printTree(trace, root!));

    // Every log line of the request carries the trace id: the gateway's access log and the services'.
    const lines = output.join("").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.find((l) => l.msg === "request" && l.request_id === sent.requestId);
    expect(access?.trace_id).toBe(root!.traceId);
    const sentLine = lines.find((l) => l.msg === "email sent" && l.email_id === sent.body.id);
    expect(sentLine?.trace_id).toBe(root!.traceId);

    // Nothing exported names the person or what was sent.
    const exported = receiver.bodies.join("\n");
    expect(exported).not.toMatch(/traced-person|Traced-Zurich|Traced-Order|sk_test_/);
  }, 120_000);
});

function printTree(spans: ReceivedSpan[], root: ReceivedSpan): string {
  const kinds = ["", "internal", "server", "client", "producer", "consumer"];
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, depth: number): void => {
    const at = `+${(span.startMs - root.startMs).toFixed(1)} ms`.padStart(11);
    const took = `${(span.endMs - span.startMs).toFixed(1)} ms`.padStart(9);
    lines.push(`${at} ${took}  ${"  ".repeat(depth)}${span.name} [${kinds[span.kind]}]`);
    for (const child of spans.filter((s) => s.parentSpanId === span.spanId)) walk(child, depth + 1);
  };
  walk(root, 0);
  return lines.join("\n");
}
