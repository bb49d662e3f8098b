// Campaign benchmark: one marketing campaign to N subscribers (default
// 100,000), from `POST /api/v1/campaigns/{id}/send` until every recipient is
// handed to the provider, with the platform as `npm start` runs it (a child
// process: embedded store; in-process bus, then Kafka).
//
//   npm run bench:campaign -w @emailsvc/bench     (writes bench/results/campaign.json)
//
// Rows: recipients per second, lost (recipients with no message at the
// provider) and duplicates (recipients with more than one email), both of
// which must be 0, and the peak memory (VmHWM) of the platform's process.
// The subscribers are written straight into the subscribers service's store
// while the platform is stopped (setup, not measured: through the API it
// would take minutes); everything measured goes through the services.
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "@emailsvc/ids";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { ensureKafka, KAFKA_VERSION, SmtpSink, type PlatformProcess } from "@emailsvc/testing";
import { describeMachine } from "../support/machine.js";
import { listmonkFromSource, prepareListmonk, type ListmonkBuild } from "../support/listmonk.js";
import { api, oneProcess, processPerService, REPO as repo, startPlatform as startPlatformWith, type Running } from "../support/platform.js";
import { serverCpu } from "../support/process.js";
import { writeResultsBlock } from "../support/readme.js";
import { runKafkaCampaigns } from "./kafka.js";
import { runListmonkCampaign } from "./listmonk.js";
import { runWireBench, wireTable } from "./wire.js";

const N = Number(process.env.CAMPAIGN_BENCH_N ?? 100_000);
/** Recipients of the side-by-side run through SMTP (ours and listmonk's). */
const SMTP_N = Number(process.env.CAMPAIGN_BENCH_SMTP_N ?? N);
/** Connections our SMTP provider keeps to the server (`SMTP_URL`'s `?pool=`). */
const SMTP_POOL = Number(process.env.CAMPAIGN_BENCH_SMTP_POOL ?? 20);
/** Recipients of the per-service runs on MongoDB (FerretDB here, whose cost grows with the square of the audience); 0 skips them. */
const MONGO_N = Number(process.env.CAMPAIGN_BENCH_MONGO_N ?? 2_000);
/** Pairs of ours and listmonk through SMTP run after the rows (CAMPAIGN_BENCH_PAIRS), for the ratio's spread. */
const PAIRS = Number(process.env.CAMPAIGN_BENCH_PAIRS ?? 2);

export const NEWSLETTER = `<mjml><mj-body>
  <mj-section><mj-column>
    <mj-text font-size="20px">Hello {{metadata.name}}</mj-text>
    <mj-text>Here is what is new this week.</mj-text>
    <mj-button href="https://example.com/news">Read more</mj-button>
  </mj-column></mj-section>
</mj-body></mjml>`;
export const SUBJECT = "News for {{metadata.name}}";

export interface CampaignRow {
  run: string;
  recipients: number;
  seconds: number;
  recipients_per_s: number;
  /** From the send request until its answer (the audience snapshot). */
  snapshot_s: number;
  lost: number;
  duplicates: number;
  peak_rss_mb: number;
  /**
   * CPU seconds the platform's processes used from the send until the last
   * hand-off (every thread and process): what a campaign costs whatever else
   * the shared machine runs meanwhile, which the wall-clock rate does not say.
   * Unset for listmonk (its PostgreSQL is a process of its own, not counted).
   */
  cpu_s?: number;
  /** Each process's peak RSS (MB) and CPU seconds from the send until the last hand-off, by name (`platform`, a service, `listmonk`, `postgresql`). */
  per_process?: Record<string, { peak_rss_mb: number; cpu_s: number }>;
  /** CPU seconds of the servers beside the platform (the Kafka broker, FerretDB, PostgreSQL) over the same span. */
  servers_cpu_s?: Record<string, number>;
}

/**
 * Limits a campaign of N test-mode recipients would hit, lifted: the gateway's
 * rate limits, and the test-mode quota (TEST_MODE_DAILY_LIMIT, 10,000 a day
 * per account by default). The sandbox keeps its default bounds (the newest
 * SANDBOX_MAX_MESSAGES_PER_TENANT, bodies as files), as `npm start` does.
 */
const UNLIMITED = { RATE_LIMIT: "off", TEST_MODE_DAILY_LIMIT: "off" };

/** What every platform of ours the benchmark starts is given on top of a run's own settings: UNLIMITED, then CAMPAIGN_BENCH_ENV's. */
const PLATFORM_ENV = { ...UNLIMITED, ...settingsToTry(process.env.CAMPAIGN_BENCH_ENV) };

/**
 * CAMPAIGN_BENCH_ENV, `NAME=value,NAME=value`: settings given to every
 * platform of ours the benchmark starts (each process of a per-service run
 * too), to try one against its default (e.g. `DELIVERY_CONCURRENCY=64`,
 * `DELIVERY_SENDER_THREAD=on`, `EMBEDDED_CACHE_MB=32`).
 */
function settingsToTry(raw: string | undefined): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    if (pair.trim() === "") continue;
    const match = /^\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair);
    if (!match) throw new Error(`CAMPAIGN_BENCH_ENV must be NAME=value pairs separated by commas, got ${JSON.stringify(pair)}`);
    settings[match[1]!] = match[2]!;
  }
  return settings;
}

/** The platform as `npm start` runs it, with PLATFORM_ENV. */
function startPlatform(dataDir: string, env: Record<string, string>): Promise<PlatformProcess> {
  return startPlatformWith(dataDir, { ...PLATFORM_ENV, ...env });
}

export interface Audience {
  dataDir: string;
  key: string;
  accountId: string;
  templateId: string;
  /** `r<i>@bench.example` for i < n. */
  addresses: (i: number) => string;
}

/** Where a benchmark's platform keeps its data: a service's store (default: the embedded one under DATA_DIR). */
export type OpenServiceStore = (dataDir: string, service: string) => Promise<DocumentStore>;
const embeddedStore: OpenServiceStore = (dataDir, service) => openStore({ dataDir, dbName: service });

/**
 * A data directory with an account (a `mode` key), the newsletter template,
 * the tag `everyone`, and `n` active subscribers holding it, written straight
 * into the subscribers service's store. `launch` starts the platform for that
 * setup (default `npm start`), `store` opens a service's store.
 */
export async function prepareAudience(
  n: number,
  mode: "test" | "live",
  env: Record<string, string> = {},
  place: { launch?: (dataDir: string, env: Record<string, string>) => Promise<{ url: string; stop(): Promise<void> }>; store?: OpenServiceStore } = {},
): Promise<Audience> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-campaign-"));
  const first = place.launch ? await place.launch(dataDir, { ...PLATFORM_ENV, ...env }) : await startPlatform(dataDir, env);
  const account = await api(first.url, "", "POST", "/admin/v1/accounts", { name: "Bench" }, true);
  const key = (await api(first.url, "", "POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode }, true)).body.key as string;
  const tag = await api(first.url, key, "POST", "/api/v1/tags", { name: "everyone" });
  const template = await api(first.url, key, "POST", "/api/v1/templates", { name: "Newsletter", subject: SUBJECT, category: "marketing", mjml_content: NEWSLETTER });
  if (tag.status !== 201 || template.status !== 201) throw new Error(`setup failed: ${tag.status} ${template.status}`);
  await first.stop();

  const addresses = (i: number) => `r${i}@bench.example`;
  const store = await (place.store ?? embeddedStore)(dataDir, "subscribers");
  const subscribers = store.collection("subscribers");
  const tenant = `${account.body.id}:${mode}`;
  const now = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    const docs = [];
    for (let j = i; j < Math.min(n, i + 10_000); j++) {
      docs.push({
        _id: newId("sub"),
        tenant,
        email: addresses(j),
        email_key: addresses(j),
        status: "active",
        metadata: { name: `Reader ${j}` },
        tag_ids: [tag.body.id],
        created_at: now,
        updated_at: now,
        deleted: false,
        version: 1,
        outbox: [],
        outbox_pending: false,
      });
    }
    await subscribers.insertMany(docs);
  }
  await store.close();
  return { dataDir, key, accountId: account.body.id, templateId: template.body.id, addresses };
}

/**
 * Sends one campaign to everyone on a prepared data directory; resolves the
 * timings and the platform's peak memory. `verify` counts what the provider
 * got (after the platform stopped).
 */
export async function runCampaign(
  name: string,
  audience: Audience,
  env: Record<string, string>,
  verify: () => Promise<{ lost: number; duplicates: number }>,
  launch: (dataDir: string, env: Record<string, string>) => Promise<Running> = oneProcess,
  servers: Record<string, () => number> = {},
): Promise<CampaignRow> {
  const platform = await launch(audience.dataDir, { ...PLATFORM_ENV, ...env });
  try {
    const created = await api(platform.url, audience.key, "POST", "/api/v1/campaigns", {
      name: "Bench",
      template_id: audience.templateId,
      tag_filter: { include_tags: ["everyone"] },
    });
    const cpu0 = platform.cpuSeconds();
    const processes0 = platform.perProcess();
    const servers0 = Object.fromEntries(Object.entries(servers).map(([name, cpu]) => [name, cpu()]));
    const t0 = performance.now();
    const sent = await api(platform.url, audience.key, "POST", `/api/v1/campaigns/${created.body.id}/send`);
    const snapshot = (performance.now() - t0) / 1000;
    if (sent.status !== 200) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.body)}`);
    let campaign = sent.body;
    let lastLog = 0;
    while (campaign.status === "sending") {
      await new Promise((resolve) => setTimeout(resolve, 200));
      campaign = (await api(platform.url, audience.key, "GET", `/api/v1/campaigns/${created.body.id}`)).body;
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        console.log(`  ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s ${JSON.stringify(campaign.counts)}`);
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = platform.cpuSeconds() - cpu0;
    const peak = platform.peakRssMb();
    const processes = Object.fromEntries(
      Object.entries(platform.perProcess()).map(([name, p]) => [name, { peak_rss_mb: p.peak_rss_mb, cpu_s: round(p.cpu_s - (processes0[name]?.cpu_s ?? 0)) }]),
    );
    const serversCpu = Object.fromEntries(Object.entries(servers).map(([name, cpu]) => [name, round(cpu() - servers0[name]!)]));
    if (campaign.status !== "sent") throw new Error(`campaign ended ${campaign.status}`);
    await platform.stop();
    const { lost, duplicates } = await verify();
    return {
      run: name,
      recipients: campaign.counts.total,
      seconds: round(seconds),
      recipients_per_s: Math.round(campaign.counts.total / seconds),
      snapshot_s: round(snapshot),
      lost,
      duplicates,
      peak_rss_mb: peak,
      cpu_s: round(cpu),
      per_process: processes,
      ...(Object.keys(serversCpu).length > 0 ? { servers_cpu_s: serversCpu } : {}),
    };
  } finally {
    await platform.stop();
  }
}

/**
 * Lost and duplicate recipients by delivery's records and the sandbox's kept
 * messages (the newest SANDBOX_MAX_MESSAGES_PER_TENANT of them: a message kept
 * twice would still show beside its email).
 */
export async function sandboxCount(audience: Audience, n: number, open: OpenServiceStore = embeddedStore): Promise<{ lost: number; duplicates: number }> {
  const store = await open(audience.dataDir, "delivery");
  try {
    const emails = await store.collection("emails").find({ status: "sent" });
    const perRecipient = new Map<string, number>();
    // A record whose address was given in lower case keeps it as `to_key` only (delivery's storage/documents.ts).
    for (const e of emails) {
      const to = (e.to ?? e.to_key) as string;
      perRecipient.set(to, (perRecipient.get(to) ?? 0) + 1);
    }
    const kept = await store.collection("sandbox_messages").count({});
    let lost = 0;
    for (let i = 0; i < n; i++) if (!perRecipient.has(audience.addresses(i))) lost++;
    const duplicates = [...perRecipient.values()].filter((c) => c > 1).length + Math.max(0, kept - perRecipient.size);
    return { lost, duplicates };
  } finally {
    await store.close();
  }
}

export function round(x: number): number {
  return Math.round(x * 100) / 100;
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const rows: CampaignRow[] = [];
  console.log(`campaign to ${N} subscribers, sandbox provider`);

  if (process.env.CAMPAIGN_BENCH_EMBEDDED !== "off") {
    const embedded = await prepareAudience(N, "test");
    rows.push(await runCampaign("embedded store, in-process bus", embedded, {}, () => sandboxCount(embedded, N)));
    console.log(rows.at(-1));
    rmSync(embedded.dataDir, { recursive: true, force: true });
  }

  // As deployed: one process per service on Kafka; on the embedded store per
  // service at N, on MongoDB (FerretDB here: its cost grows with the
  // square of the audience) at CAMPAIGN_BENCH_MONGO_N, with one and with two
  // delivery and campaigns processes.
  // CAMPAIGN_BENCH_KAFKA=smtp-only with CAMPAIGN_BENCH_LISTMONK=ours: the per-service row through SMTP alone (memory per process).
  const kafkaSmtpOnly = process.env.CAMPAIGN_BENCH_KAFKA === "smtp-only" && process.env.CAMPAIGN_BENCH_LISTMONK === "ours";
  if (process.env.CAMPAIGN_BENCH_KAFKA !== "off" && process.env.CAMPAIGN_BENCH_KAFKA !== "smtp-only") {
    rows.push(...(await runKafkaCampaigns(N, ["embedded"])));
    if (MONGO_N > 0) rows.push(...(await runKafkaCampaigns(MONGO_N, ["mongo", "replicas"])));
  }

  // Side by side through one real SMTP server: ours (a live key,
  // EMAIL_PROVIDER=smtp) and listmonk, the same message to the same addresses.
  const side: CampaignRow[] = [];
  /** Ours (embedded, CHUNKING) and the first listmonk build, one after the other: the rows' pair first. */
  const pairs: Pair[] = [];
  let pairedWith = "";
  if (process.env.CAMPAIGN_BENCH_LISTMONK !== "off") {
    console.log(`side by side through SMTP: ${SMTP_N} subscribers`);
    // The tests' SMTP sink in its counting mode: it parses and keeps nothing. It offers CHUNKING, as
    // Postfix does (ours sends with BDAT); `dataSink` does not (ours sends with DATA, as listmonk's Go
    // client does whatever the server offers), for the row of ours written down beside it.
    const chunkingSink = await new SmtpSink({ keep: false }).start();
    const dataSink = await new SmtpSink({ keep: false, chunking: false }).start();
    let sink = chunkingSink;
    const tally = (n: number, address: (i: number) => string) => {
      let lost = 0;
      for (let i = 0; i < n; i++) if (!sink.recipientCounts.has(address(i))) lost++;
      return { lost, duplicates: [...sink.recipientCounts.values()].filter((c) => c > 1).length };
    };
    /** One campaign of ours through the sink: its row, and the audience's addresses (listmonk mails the same). */
    const smtpCampaign = async (name: string, env: Record<string, string>, launch?: (dataDir: string, env: Record<string, string>) => Promise<Running>, servers?: Record<string, () => number>) => {
      sink.recipientCounts.clear();
      const audience = await prepareAudience(SMTP_N, "live", env);
      try {
        const row = await runCampaign(name, audience, env, async () => tally(SMTP_N, audience.addresses), launch, servers);
        console.log(row);
        return { row, audience };
      } finally {
        rmSync(audience.dataDir, { recursive: true, force: true });
      }
    };
    const smtpRun = async (...args: Parameters<typeof smtpCampaign>) => {
      const run = await smtpCampaign(...args);
      side.push(run.row);
      return run;
    };
    /** One campaign of listmonk's through the sink, to `addresses`: its row. */
    const listmonkRun = async (build: ListmonkBuild, message: { subject: string; html: string; text: string }, addresses: (i: number) => string): Promise<CampaignRow> => {
      sink.recipientCounts.clear();
      const before = sink.acceptedCount;
      const lm = await runListmonkCampaign({ build, subscribers: SMTP_N, addresses, smtpPort: sink.port, ...message, delivered: () => sink.acceptedCount - before });
      const { lost, duplicates } = tally(SMTP_N, addresses);
      const row: CampaignRow = {
        run: `listmonk ${lm.version} (PostgreSQL), SMTP`,
        recipients: SMTP_N,
        // Its rate from its first message on: the wait for its 5-second scan left out (ours counts from the send request).
        seconds: round(lm.sendingSeconds),
        recipients_per_s: Math.round(lm.sent / lm.sendingSeconds),
        snapshot_s: 0,
        lost,
        duplicates,
        peak_rss_mb: lm.peakRssMb,
        cpu_s: round(lm.cpuSeconds),
        per_process: { listmonk: { peak_rss_mb: lm.peakRssMb, cpu_s: round(lm.cpuSeconds) }, postgresql: { peak_rss_mb: 0, cpu_s: round(lm.postgresCpuSeconds) } },
      };
      console.log(row);
      return row;
    };
    try {
      const smtpEnv = {
        EMAIL_PROVIDER: "smtp",
        SMTP_URL: `smtp://127.0.0.1:${sink.port}?pool=${SMTP_POOL}`,
      };
      const ours = kafkaSmtpOnly ? undefined : await smtpRun("emailsvc (embedded), SMTP", smtpEnv);
      if (process.env.CAMPAIGN_BENCH_SMTP_DATA !== "off" && !kafkaSmtpOnly) {
        sink = dataSink;
        try {
          await smtpRun("emailsvc (embedded), SMTP without CHUNKING (DATA)", { ...smtpEnv, SMTP_URL: `smtp://127.0.0.1:${dataSink.port}?pool=${SMTP_POOL}` });
        } finally {
          sink = chunkingSink;
        }
      }
      if (process.env.CAMPAIGN_BENCH_DKIM !== "off" && !kafkaSmtpOnly) {
        // Signed as a platform signs its own From: one RSA-2048 signature per message (DKIM_PLATFORM_*).
        const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
        await smtpRun("emailsvc (embedded), SMTP, DKIM-signed (RSA 2048)", {
          ...smtpEnv,
          DKIM_PLATFORM_SELECTOR: "bench",
          DKIM_PLATFORM_KEY: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        });
      }
      if (process.env.CAMPAIGN_BENCH_KAFKA !== "off") {
        const kafka = await ensureKafka();
        try {
          const env = { ...smtpEnv, KAFKA_BROKERS: kafka.brokers, KAFKA_NAMESPACE: `bench${Date.now().toString(36)}m` };
          await smtpRun(`emailsvc (process per service, embedded store, Kafka ${KAFKA_VERSION}), SMTP`, env, (dataDir, withEnv) => processPerService(dataDir, withEnv), serverCpu(kafka.brokers));
        } finally {
          await kafka.stop();
        }
      }

      // The message as our template renders it, with listmonk's variable where the name goes.
      // CAMPAIGN_BENCH_LISTMONK=ours: our side of the comparison alone (iterating on the SMTP path).
      const message = process.env.CAMPAIGN_BENCH_LISTMONK === "ours" ? undefined : await renderedForListmonk();
      const listmonkRuns = message !== undefined && ours !== undefined ? { message, ours, builds: await listmonkBuilds() } : undefined;
      const listmonkRows: CampaignRow[] = [];
      for (const build of listmonkRuns?.builds ?? []) listmonkRows.push(await listmonkRun(build, listmonkRuns!.message, listmonkRuns!.ours.audience.addresses));
      side.push(...listmonkRows);

      // One pair's ratio moves by a fifth either way with what else runs on a shared machine:
      // CAMPAIGN_BENCH_PAIRS more pairs (ours embedded with CHUNKING, then the first listmonk
      // build, alternating), their ratios written down beside the first pair's, with the median.
      const anchorBuild = listmonkRuns?.builds[0];
      if (anchorBuild !== undefined) {
        pairedWith = `listmonk ${anchorBuild.version}`;
        pairs.push(pairOf(listmonkRuns!.ours.row, listmonkRows[0]!));
        for (let i = 0; i < PAIRS; i++) {
          const { row: ours, audience } = await smtpCampaign(`emailsvc (embedded), SMTP, pair ${i + 2}`, smtpEnv);
          const theirs = await listmonkRun(anchorBuild, listmonkRuns!.message, audience.addresses);
          if (ours.lost + ours.duplicates + theirs.lost + theirs.duplicates > 0) throw new Error(`pair ${i + 2} lost or duplicated recipients: ${JSON.stringify({ ours, theirs })}`);
          pairs.push(pairOf(ours, theirs));
        }
      }
    } finally {
      await Promise.all([chunkingSink.close(), dataSink.close()]);
    }
  }

  // The wire alone: our SMTP provider at 1, 5, 20 and 50 connections, with and without DKIM.
  if (process.env.CAMPAIGN_BENCH_WIRE !== "off") {
    const wire = await runWireBench({ only: (row) => row.client === "emailsvc" && row.server.startsWith("lean sink") });
    extraResults.wire = wire;
    extraTables.push(
      "",
      "The wire alone (`bench:smtp-wire`'s curve: our SMTP provider sending built messages to the lean sink in a process of its own; DKIM rows send a quarter as many):",
      "",
      wireTable(wire),
    );
  }

  const results = { machine, recipients: N, rows, smtp: { recipients: SMTP_N, pool: SMTP_POOL, rows: side, pairs, paired_with: pairedWith }, extra: extraResults, at: new Date().toISOString() };
  const dir = join(repo, "bench", "results");
  mkdirSync(dir, { recursive: true });
  // CAMPAIGN_BENCH_LISTMONK=ours is for iterating: nothing recorded.
  const record = process.env.CAMPAIGN_BENCH_LISTMONK !== "ours";
  if (record) writeFileSync(join(dir, "campaign.json"), JSON.stringify(results, null, 2) + "\n");
  const anchor = side.find((r) => /^listmonk v6/.test(r.run)) ?? side.find((r) => r.run.startsWith("listmonk"));
  const processes = (r: CampaignRow) =>
    [
      ...Object.entries(r.per_process ?? {}).map(([name, p]) => `${name} ${p.peak_rss_mb ? `${p.peak_rss_mb} MB, ` : ""}${p.cpu_s} s`),
      // The servers beside the platform (not in its CPU s): the Kafka broker, FerretDB, PostgreSQL.
      ...Object.entries(r.servers_cpu_s ?? {}).map(([name, cpu]) => `(${name} ${cpu} s)`),
    ].join("; ") || "—";
  const table = [
    `Run of ${results.at.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} × ${machine.cpu}, Node ${machine.node}, load at start ${machine.loadavg_start}; ${N.toLocaleString("en")} subscribers.`,
    "",
    "To the sandbox (test-mode key):",
    "",
    "| run | recipients | s | recipients/s | CPU s | snapshot s | lost | duplicates | peak RSS MB (largest process) | per process: peak RSS, CPU s |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ...rows.map((r) => `| ${r.run} | ${r.recipients} | ${r.seconds} | ${r.recipients_per_s} | ${r.cpu_s ?? "—"} | ${r.snapshot_s} | ${r.lost} | ${r.duplicates} | ${largest(r)} | ${processes(r)} |`),
    ...(side.length > 0
      ? [
          "",
          `Through one SMTP server (the testing kit's SmtpSink, counting; ${SMTP_N.toLocaleString("en")} subscribers, the same message; ours with \`?pool=${SMTP_POOL}\`, timed from the send request; listmonk's from its first message at the server, leaving out its wait of up to 5 s for its next scan; ratio = recipients/s ÷ ${anchor ? anchor.run.replace(/ \(.*$/, "") : "listmonk"}'s):`,
          "",
          "| run | recipients | s | recipients/s | ratio | CPU s | lost | duplicates | peak RSS MB (largest process) | per process: peak RSS, CPU s |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
          ...side.map(
            (r) =>
              `| ${r.run} | ${r.recipients} | ${r.seconds} | ${r.recipients_per_s} | ${anchor ? (r.recipients_per_s / anchor.recipients_per_s).toFixed(2) : "—"} | ${r.cpu_s ?? "—"} | ${r.lost} | ${r.duplicates} | ${largest(r)} | ${processes(r)} |`,
          ),
          ...(pairs.length > 1 ? ["", pairsLine(pairs, pairedWith)] : []),
        ]
      : []),
    ...extraTables,
  ].join("\n");
  if (record) writeResultsBlock(join(repo, "bench", "README.md"), "campaign", "Campaign fan-out", table);
  console.log(table);
}

/** One campaign of ours and one of listmonk's, run one after the other. */
interface Pair {
  ours_s: number;
  listmonk_s: number;
  ratio: number;
}

function pairOf(ours: CampaignRow, theirs: CampaignRow): Pair {
  return { ours_s: ours.seconds, listmonk_s: theirs.seconds, ratio: round(ours.recipients_per_s / theirs.recipients_per_s) };
}

/** The pairs' ratios in the order run, their median, and each side's range of seconds. */
function pairsLine(pairs: readonly Pair[], theirs: string): string {
  const ratios = pairs.map((p) => p.ratio);
  const sorted = [...ratios].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  const median = sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  const range = (values: number[]) => `${Math.min(...values)}–${Math.max(...values)} s`;
  return (
    `Ours (embedded, with CHUNKING) and ${theirs} one after the other, ${pairs.length} pairs (the rows above first): ratios ${ratios.map((r) => r.toFixed(2)).join(", ")}, ` +
    `**median ${median.toFixed(2)}**; ours ${range(pairs.map((p) => p.ours_s))}, ${theirs} ${range(pairs.map((p) => p.listmonk_s))}.`
  );
}

/** The largest process's peak RSS (one process embedded; per service otherwise). */
function largest(r: CampaignRow): number {
  return r.per_process ? Math.max(...Object.values(r.per_process).map((p) => p.peak_rss_mb)) : r.peak_rss_mb;
}

/**
 * The listmonk builds to run: the one of LISTMONK_SRC (a clone of
 * github.com/knadh/listmonk) at LISTMONK_REF (default v6.2.0) when set, then
 * v1.1.0 from the Go module proxy (the only version it serves), unless
 * CAMPAIGN_BENCH_LISTMONK_V1=off.
 */
async function listmonkBuilds(): Promise<ListmonkBuild[]> {
  const builds: ListmonkBuild[] = [];
  if (process.env.LISTMONK_SRC) builds.push(await listmonkFromSource(process.env.LISTMONK_SRC, process.env.LISTMONK_REF || "v6.2.0"));
  else console.log("LISTMONK_SRC is not set: no current listmonk to compare (a clone of github.com/knadh/listmonk; LISTMONK_REF picks the tag, default v6.2.0)");
  if (process.env.CAMPAIGN_BENCH_LISTMONK_V1 !== "off") builds.push(await prepareListmonk());
  return builds;
}

/**
 * Our newsletter as our renderer makes it (the template preview), with the
 * recipient's name left as `{{metadata.name}}` for listmonk's variable to
 * take its place: listmonk sends the same HTML, text and subject.
 */
async function renderedForListmonk(): Promise<{ subject: string; html: string; text: string }> {
  const marker = "{{metadata.name}}";
  const dataDir = mkdtempSync(join(tmpdir(), "bench-campaign-preview-"));
  const platform = await startPlatform(dataDir, {});
  try {
    const account = await api(platform.url, "", "POST", "/admin/v1/accounts", { name: "Preview" }, true);
    const key = (await api(platform.url, "", "POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "test" }, true)).body.key as string;
    const template = await api(platform.url, key, "POST", "/api/v1/templates", { name: "Newsletter", subject: SUBJECT, category: "marketing", mjml_content: NEWSLETTER });
    const preview = await api(platform.url, key, "POST", `/api/v1/templates/${template.body.id}/preview`, { variables: { metadata: { name: marker } } });
    if (preview.status !== 200 || !String(preview.body.html).includes(marker)) throw new Error(`preview: ${preview.status} ${JSON.stringify(preview.body).slice(0, 300)}`);
    return { subject: preview.body.subject, html: preview.body.html, text: preview.body.text };
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Further tables (markdown lines) and their results, e.g. the wire's connection curve. */
const extraTables: string[] = [];
const extraResults: Record<string, unknown> = {};

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
