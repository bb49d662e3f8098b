// Hand-off window benchmark: how long a sent message stays unrecorded. From
// the moment the SMTP relay answers 250 to DATA (it has taken the message) to
// the moment delivery's `sent` write has resolved (the store has it), a crash
// of delivery sends the message a second time after the restart: nothing says
// it went out. This measures that window, per email, on the stores delivery
// runs on.
//
//   npm run bench:handoff -w @emailsvc/bench   (≈ 1 min; writes results/handoff.json and the README table)
//
// Delivery runs in this process (startDeliveryService, as the service runs it,
// SMTP provider, default lease and sweeps, the durable in-process bus in a
// temporary directory) with a real SMTP server (npm smtp-server) on loopback
// and a TemplateService in memory. Two clocks would not agree to a
// millisecond, so both ends are timed here, on one clock: the server records
// when it writes its 250 (keyed by the message's Message-ID, which names the
// email), a wrapper of delivery's store when the write that sets `sent`
// resolves. The relay is on loopback: over a network the window grows by the
// time the 250 takes to arrive.
//
// Two phases per store: one email at a time (nothing else running), and
// `LOAD` emails queued at once through SendEmail (sends on the bus' three
// partitions at once, SendEmail's own writes beside them).

import { writeFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { startDeliveryService } from "@emailsvc/delivery";
import { InProcessEventBus } from "@emailsvc/events";
import { delivery, templates } from "@emailsvc/proto";
import { callHeaders, createLogger, createServiceTransport, newId } from "@emailsvc/runtime";
import {
  openEmbeddedStore,
  openMongoStore,
  type AnyDoc,
  type Collection,
  type Doc,
  type DocumentStore,
  type UntypedUpdate,
} from "@emailsvc/storage";
import { compileRenderer } from "@emailsvc/templates/render";
import { ensureMongo } from "@emailsvc/testing";
import { SMTPServer } from "smtp-server";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", ".."); // bench/dist/handoff -> bench
const ONE_AT_A_TIME = Number(process.env.BENCH_HANDOFF_SEQUENTIAL ?? 100);
const LOAD = Number(process.env.BENCH_HANDOFF_LOAD ?? 300);

interface Cell {
  store: string;
  phase: string;
  emails: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
}

const round = (n: number) => Number(n.toFixed(2));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** Waits for events keyed by email id; resolves each waiter at most once. */
class Moments {
  readonly at = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();

  mark(id: string): void {
    if (!this.at.has(id)) this.at.set(id, performance.now());
    this.waiters.get(id)?.();
    this.waiters.delete(id);
  }

  wait(id: string): Promise<void> {
    if (this.at.has(id)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.set(id, resolve));
  }
}

/** Delivery's store, with the moment each `sent` write resolved recorded. */
function watched(inner: DocumentStore, written: Moments): DocumentStore {
  return {
    collection<T extends Doc = AnyDoc>(name: string): Collection<T> {
      const c = inner.collection<T>(name);
      if (name !== "emails") return c;
      return {
        createIndexes: (specs) => c.createIndexes(specs),
        insertOne: (doc) => c.insertOne(doc),
        findOne: (filter) => c.findOne(filter),
        find: (filter, options) => c.find(filter, options),
        count: (filter) => c.count(filter),
        async updateOne(filter, update) {
          const doc = await c.updateOne(filter, update);
          if (doc !== null && (update as UntypedUpdate).$set?.status === "sent") written.mark(doc._id);
          return doc;
        },
        deleteOne: (filter) => c.deleteOne(filter),
        deleteMany: (filter) => c.deleteMany(filter),
      };
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}

/** A relay on loopback that records when it says 250, by the email id in the Message-ID. */
async function startRelay(accepted: Moments): Promise<{ url: string; close(): Promise<void> }> {
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const id = /^Message-ID:\s*<(eml_[0-9a-z]+)@/im.exec(Buffer.concat(chunks).toString("latin1"))?.[1];
        if (id) accepted.mark(id);
        callback(null, "OK queued");
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** TemplateService in memory: one transactional template. */
function templateService() {
  const templateId = newId("tpl");
  return createRouterTransport((router) =>
    router.service(templates.TemplateService, {
      getCompiledTemplate: async () =>
        create(templates.GetCompiledTemplateResponseSchema, {
          compiled: {
            templateId,
            slug: "order-shipped",
            version: 1,
            category: templates.TemplateCategory.TRANSACTIONAL,
            subject: "Order {{order}} shipped",
            html: "<html><body><p>Your order {{order}} is on its way.</p></body></html>",
            variables: ["order"],
          },
        }),
    }),
  );
}

async function benchStore(name: string, open: () => Promise<DocumentStore>): Promise<Cell[]> {
  const accepted = new Moments();
  const written = new Moments();
  const relay = await startRelay(accepted);
  const busDir = mkdtempSync(path.join(tmpdir(), "bench-handoff-bus-"));
  const bus = await InProcessEventBus.open({ dir: busDir, logger: () => {} });
  const store = await open();
  const service = await startDeliveryService({
    store: watched(store, written),
    bus,
    logger: createLogger("delivery", "silent"),
    port: 0,
    templatesTransport: templateService(),
    provider: "smtp",
    smtp: relay.url,
    from: "Shop <shop@example.test>",
    renderer: compileRenderer,
  });
  const client = createClient(delivery.DeliveryService, createServiceTransport(service.url));
  const headers = callHeaders({ tenant: { accountId: newId("acc"), mode: "live" }, actor: "bench", requestId: "bench" });
  const send = async (i: number): Promise<string> => {
    const { email } = await client.sendEmail({ templateSlug: "order-shipped", to: `buyer${i}@example.com`, variables: { order: `A-${i}` } }, { headers });
    return email!.id;
  };
  const windows = (ids: string[]) => ids.map((id) => written.at.get(id)! - accepted.at.get(id)!).sort((a, b) => a - b);
  const cell = (phase: string, ids: string[]): Cell => {
    const sorted = windows(ids);
    return {
      store: name,
      phase,
      emails: sorted.length,
      p50_ms: round(percentile(sorted, 50)),
      p90_ms: round(percentile(sorted, 90)),
      p99_ms: round(percentile(sorted, 99)),
      max_ms: round(sorted[sorted.length - 1]!),
    };
  };
  try {
    // Warm-up: connections, the compiled template, the JIT.
    for (let i = 0; i < 20; i += 1) await written.wait(await send(i));

    const sequential: string[] = [];
    for (let i = 0; i < ONE_AT_A_TIME; i += 1) {
      const id = await send(1000 + i);
      await written.wait(id);
      sequential.push(id);
    }
    const loaded = await Promise.all(Array.from({ length: LOAD }, (_, i) => send(10_000 + i)));
    await Promise.all(loaded.map((id) => written.wait(id)));
    const cells = [cell("one email at a time", sequential), cell(`${LOAD} queued at once`, loaded)];
    for (const c of cells) console.log(JSON.stringify(c));
    return cells;
  } finally {
    await service.close();
    await bus.close();
    await store.close();
    await relay.close();
    rmSync(busDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const cells: Cell[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), "bench-handoff-store-"));
  try {
    cells.push(...(await benchStore("embedded (NeDB file)", () => openEmbeddedStore({ dataDir }))));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  const mongo = await ensureMongo();
  try {
    cells.push(
      ...(await benchStore(mongo.source === "env" ? "MongoDB protocol (MONGO_URL)" : "MongoDB protocol (FerretDB 1.24.2, as in CI)", () =>
        openMongoStore({ url: mongo.url, dbName: `bench_handoff_${newId("db").slice(3, 15)}` }),
      )),
    );
  } finally {
    await mongo.stop();
  }

  writeFileSync(path.join(benchRoot, "results", "handoff.json"), JSON.stringify({ machine, cells }, null, 2) + "\n");
  const rows = cells.map((c) => `| ${c.store} | ${c.phase} | ${c.emails} | ${c.p50_ms} | ${c.p90_ms} | ${c.p99_ms} | ${c.max_ms} |`);
  const block = [
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores, Node ${machine.node}, load average ${machine.loadavg_start.split(" ")[0]} at start (\`results/handoff.json\`):`,
    "",
    "| store | phase | emails | p50 ms | p90 ms | p99 ms | max ms |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "handoff", "Hand-off window: from the relay's 250 to the durable `sent` write", block);
  console.log(block);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
