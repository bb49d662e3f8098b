// The duplicate window of a send: from the relay's reply to DATA (SMTP 250,
// as the delivery service receives it) to the end of the write that records
// `sent`. A crash inside it sends the message again (with the same
// Message-ID). The delivery service logs the window of every send
// (`status_write_ms` of its "email sent" line); this benchmark sends emails
// through a real SMTP server (npm smtp-server, accepting everything) and
// reads those lines. Results: results/handoff.json and the table in
// services/delivery/README.md.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { loadProviders, startDeliveryService } from "@emailsvc/delivery";
import { openBus } from "@emailsvc/events";
import { delivery, templates } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { createLogger } from "@emailsvc/telemetry";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import { openStore } from "@emailsvc/storage";
import { startTemplatesService } from "@emailsvc/templates";
import { ensureKafka, ensureMongo, KAFKA_VERSION } from "@emailsvc/testing";
import pino from "pino";
import { SMTPServer } from "smtp-server";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const repo = join(__dirname, "..", "..", ".."); // bench/dist/handoff -> repo root
const EMAILS = Number(process.env.HANDOFF_EMAILS ?? 300);
const IN_FLIGHT = 8;

interface Cell {
  setup: string;
  emails: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function startRelay(): Promise<{ url: string; close(): Promise<void> }> {
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      stream.on("data", () => undefined);
      stream.on("end", () => callback(null, "OK: queued"));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function measure(setup: string, env: { mongoUrl?: string; kafkaBrokers?: string }): Promise<Cell> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-handoff-"));
  const windows: number[] = [];
  // The delivery service's own log lines are where the window is measured.
  const logger = pino({ level: "info" }, {
    write(line: string) {
      const entry = JSON.parse(line) as { msg?: string; status_write_ms?: number };
      if (entry.msg === "email sent" && typeof entry.status_write_ms === "number") windows.push(entry.status_write_ms);
    },
  });
  const prefix = `bench_handoff_${newId("db").slice(3, 15)}_`;
  const open = (name: string) => openStore({ mongoUrl: env.mongoUrl, dataDir, dbName: `${prefix}${name}` });
  const [templatesStore, deliveryStore] = await Promise.all([open("templates"), open("delivery")]);
  const bus = await openBus({ brokers: env.kafkaBrokers, clientId: "bench-handoff", dataDir, logger: () => {} });
  const relay = await startRelay();
  const templatesService = await startTemplatesService({ store: templatesStore, logger: createLogger("templates", "silent"), port: 0 });
  const service = await startDeliveryService({
    store: deliveryStore,
    bus,
    logger,
    port: 0,
    templatesUrl: templatesService.url,
    providers: loadProviders({ EMAIL_PROVIDER: "smtp", SMTP_URL: relay.url }),
    from: "Bench <bench@bench.example>",
    consumerGroup: `bench-handoff-${newId("grp").slice(4)}`,
  });
  try {
    const call: CallContext = { tenant: { accountId: newId("acc"), mode: "live" }, actor: "bench", requestId: "bench" };
    const headers = { headers: callHeaders(call) };
    await createClient(templates.TemplateService, createServiceTransport(templatesService.url)).createTemplate(
      { name: "Receipt", subject: "Receipt {{n}}", category: templates.TemplateCategory.TRANSACTIONAL, mjmlContent: "<mjml><mj-body><mj-section><mj-column><mj-text>Receipt {{n}}</mj-text></mj-column></mj-section></mj-body></mjml>" },
      headers,
    );
    const client = createClient(delivery.DeliveryService, createServiceTransport(service.url));
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < EMAILS) {
          const n = next++;
          await client.sendEmail({ templateSlug: "receipt", to: `reader${n}@example.com`, variables: { n: String(n) } }, headers);
        }
      }),
    );
    const deadline = Date.now() + 10 * 60_000;
    while (windows.length < EMAILS) {
      if (Date.now() > deadline) throw new Error(`only ${windows.length} of ${EMAILS} emails sent`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await service.close({ graceMs: 1000 });
    await templatesService.close();
    await relay.close();
    await bus.close();
    await Promise.all([templatesStore.close(), deliveryStore.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
  const sorted = [...windows].sort((a, b) => a - b);
  const round = (x: number) => Number(x.toFixed(2));
  return {
    setup,
    emails: sorted.length,
    p50_ms: round(percentile(sorted, 50)),
    p95_ms: round(percentile(sorted, 95)),
    p99_ms: round(percentile(sorted, 99)),
    max_ms: round(sorted[sorted.length - 1] ?? 0),
  };
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const mongo = await ensureMongo();
  const kafka = await ensureKafka();
  const cells: Cell[] = [];
  try {
    cells.push(await measure("embedded (file) + in-process bus", {}));
    // The label says what the servers are (the test setup's FerretDB/PostgreSQL, a container, or the URLs given).
    const kafkaLabel = kafka.source === "env" ? "Kafka at KAFKA_BROKERS" : `Kafka ${KAFKA_VERSION}`;
    cells.push(await measure(`${mongo.description} + ${kafkaLabel}`, { mongoUrl: mongo.url, kafkaBrokers: kafka.brokers }));
  } finally {
    await kafka.stop();
    await mongo.stop();
  }
  mkdirSync(join(repo, "bench", "results"), { recursive: true });
  writeFileSync(join(repo, "bench", "results", "handoff.json"), JSON.stringify({ machine, emails: EMAILS, in_flight: IN_FLIGHT, cells }, null, 2) + "\n");
  const table = [
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores, Node ${machine.node}, load average ${machine.loadavg_start.split(" ")[0]} at start (\`bench/results/handoff.json\`, ${EMAILS} emails, ${IN_FLIGHT} sends in flight):`,
    "",
    "| store + bus | emails | p50 ms | p95 ms | p99 ms | max ms |",
    "|---|---:|---:|---:|---:|---:|",
    ...cells.map((c) => `| ${c.setup} | ${c.emails} | ${c.p50_ms} | ${c.p95_ms} | ${c.p99_ms} | ${c.max_ms} |`),
  ].join("\n");
  writeResultsBlock(join(repo, "services", "delivery", "README.md"), "handoff", "The duplicate window, measured", table);
  console.log(table);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
