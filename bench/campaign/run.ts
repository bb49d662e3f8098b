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
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "@emailsvc/ids";
import { openStore } from "@emailsvc/storage";
import { ensureKafka, KAFKA_VERSION, SmtpSink, type PlatformProcess } from "@emailsvc/testing";
import { describeMachine } from "../support/machine.js";
import { LISTMONK_VERSION } from "../support/listmonk.js";
import { api, oneProcess, processPerService, REPO as repo, startPlatform as startPlatformWith, type Running } from "../support/platform.js";
import { writeResultsBlock } from "../support/readme.js";
import { runListmonkCampaign } from "./listmonk.js";

const N = Number(process.env.CAMPAIGN_BENCH_N ?? 100_000);
/** Recipients of the side-by-side run through SMTP (ours and listmonk's). */
const SMTP_N = Number(process.env.CAMPAIGN_BENCH_SMTP_N ?? N);

export const NEWSLETTER = `<mjml><mj-body>
  <mj-section><mj-column>
    <mj-text font-size="20px">Hello {{metadata.name}}</mj-text>
    <mj-text>Here is what is new this week.</mj-text>
    <mj-button href="https://example.com/news">Read more</mj-button>
  </mj-column></mj-section>
</mj-body></mjml>`;
export const SUBJECT = "News for {{metadata.name}}";
/** The same message as HTML for listmonk, which takes no MJML. */
const NEWSLETTER_HTML = `<!doctype html><html><body style="font-family:Arial,sans-serif">
<h1 style="font-size:20px">Hello {{metadata.name}}</h1>
<p>Here is what is new this week.</p>
<p><a href="https://example.com/news" style="background:#414141;color:#fff;padding:10px 25px;text-decoration:none">Read more</a></p>
</body></html>`;

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
}

/**
 * Limits a campaign of N test-mode recipients would hit, lifted: the gateway's
 * rate limits, and the test-mode quota (TEST_MODE_DAILY_LIMIT, 10,000 a day
 * per account by default). The sandbox keeps its default bounds (the newest
 * SANDBOX_MAX_MESSAGES_PER_TENANT, bodies as files), as `npm start` does.
 */
const UNLIMITED = { RATE_LIMIT: "off", TEST_MODE_DAILY_LIMIT: "off" };

/** The platform as `npm start` runs it, with UNLIMITED. */
function startPlatform(dataDir: string, env: Record<string, string>): Promise<PlatformProcess> {
  return startPlatformWith(dataDir, { ...UNLIMITED, ...env });
}

export interface Audience {
  dataDir: string;
  key: string;
  accountId: string;
  templateId: string;
  /** `r<i>@bench.example` for i < n. */
  addresses: (i: number) => string;
}

/**
 * A data directory with an account (a `mode` key), the newsletter template,
 * the tag `everyone`, and `n` active subscribers holding it, written straight
 * into the subscribers service's store.
 */
export async function prepareAudience(n: number, mode: "test" | "live", env: Record<string, string> = {}): Promise<Audience> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-campaign-"));
  const first = await startPlatform(dataDir, env);
  const account = await api(first.url, "", "POST", "/admin/v1/accounts", { name: "Bench" }, true);
  const key = (await api(first.url, "", "POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode }, true)).body.key as string;
  const tag = await api(first.url, key, "POST", "/api/v1/tags", { name: "everyone" });
  const template = await api(first.url, key, "POST", "/api/v1/templates", { name: "Newsletter", subject: SUBJECT, category: "marketing", mjml_content: NEWSLETTER });
  if (tag.status !== 201 || template.status !== 201) throw new Error(`setup failed: ${tag.status} ${template.status}`);
  await first.stop();

  const addresses = (i: number) => `r${i}@bench.example`;
  const store = await openStore({ dataDir, dbName: "subscribers" });
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
): Promise<CampaignRow> {
  const platform = await launch(audience.dataDir, { ...UNLIMITED, ...env });
  try {
    const created = await api(platform.url, audience.key, "POST", "/api/v1/campaigns", {
      name: "Bench",
      template_id: audience.templateId,
      tag_filter: { include_tags: ["everyone"] },
    });
    const cpu0 = platform.cpuSeconds();
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
async function sandboxCount(audience: Audience, n: number): Promise<{ lost: number; duplicates: number }> {
  const store = await openStore({ dataDir: audience.dataDir, dbName: "delivery" });
  try {
    const emails = await store.collection("emails").find({ status: "sent" });
    const perRecipient = new Map<string, number>();
    for (const e of emails) perRecipient.set(e.to as string, (perRecipient.get(e.to as string) ?? 0) + 1);
    const kept = await store.collection("sandbox_messages").count({});
    let lost = 0;
    for (let i = 0; i < n; i++) if (!perRecipient.has(audience.addresses(i))) lost++;
    const duplicates = [...perRecipient.values()].filter((c) => c > 1).length + Math.max(0, kept - perRecipient.size);
    return { lost, duplicates };
  } finally {
    await store.close();
  }
}

function round(x: number): number {
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

  if (process.env.CAMPAIGN_BENCH_KAFKA !== "off") {
    const kafka = await ensureKafka();
    try {
      const env = { KAFKA_BROKERS: kafka.brokers, KAFKA_NAMESPACE: `bench${Date.now().toString(36)}` };
      const onKafka = await prepareAudience(N, "test", env);
      rows.push(await runCampaign(`embedded store, Kafka ${KAFKA_VERSION}`, onKafka, env, () => sandboxCount(onKafka, N)));
      console.log(rows.at(-1));
      rmSync(onKafka.dataDir, { recursive: true, force: true });
      if (process.env.CAMPAIGN_BENCH_SPLIT !== "off") {
        // As deployed: one process per service (each its own store), the same Kafka.
        const split = { ...env, KAFKA_NAMESPACE: `bench${Date.now().toString(36)}s` };
        const apart = await prepareAudience(N, "test", split);
        rows.push(await runCampaign(`process per service, Kafka ${KAFKA_VERSION}`, apart, split, () => sandboxCount(apart, N), processPerService));
        console.log(rows.at(-1));
        rmSync(apart.dataDir, { recursive: true, force: true });
      }
    } finally {
      await kafka.stop();
    }
  }

  // Side by side through one real SMTP server: ours (embedded store,
  // in-process bus, EMAIL_PROVIDER=smtp, a live key) and listmonk.
  const side: CampaignRow[] = [];
  if (process.env.CAMPAIGN_BENCH_LISTMONK !== "off") {
    console.log(`side by side through SMTP: ${SMTP_N} subscribers`);
    // The tests' SMTP sink in its counting mode: it parses and keeps nothing.
    const sink = await new SmtpSink({ keep: false }).start();
    const tally = (n: number, address: (i: number) => string) => {
      let lost = 0;
      for (let i = 0; i < n; i++) if (!sink.recipientCounts.has(address(i))) lost++;
      return { lost, duplicates: [...sink.recipientCounts.values()].filter((c) => c > 1).length };
    };
    try {
      const smtpEnv = { EMAIL_PROVIDER: "smtp", SMTP_URL: `smtp://127.0.0.1:${sink.port}?pool=20`, DELIVERY_CONCURRENCY: "32" };
      const ours = await prepareAudience(SMTP_N, "live", smtpEnv);
      side.push(await runCampaign("emailsvc (embedded), SMTP", ours, smtpEnv, async () => tally(SMTP_N, ours.addresses)));
      console.log(side.at(-1));
      rmSync(ours.dataDir, { recursive: true, force: true });
      sink.recipientCounts.clear();
      // CAMPAIGN_BENCH_LISTMONK=ours: our side of the comparison alone (iterating on the SMTP path).
      if (process.env.CAMPAIGN_BENCH_LISTMONK === "ours") return;
      const before = sink.acceptedCount;
      const lm = await runListmonkCampaign({
        subscribers: SMTP_N,
        addresses: ours.addresses,
        smtpPort: sink.port,
        subject: SUBJECT,
        html: NEWSLETTER_HTML,
        delivered: () => sink.acceptedCount - before,
      });
      const { lost, duplicates } = tally(SMTP_N, ours.addresses);
      side.push({
        run: `listmonk ${lm.version} (PostgreSQL), SMTP`,
        recipients: SMTP_N,
        seconds: round(lm.seconds),
        recipients_per_s: Math.round(lm.sent / lm.seconds),
        snapshot_s: 0,
        lost,
        duplicates,
        peak_rss_mb: lm.peakRssMb,
      });
      console.log(side.at(-1));
    } finally {
      await sink.close();
    }
  }

  const results = { machine, recipients: N, rows, smtp: { recipients: SMTP_N, listmonk: LISTMONK_VERSION, rows: side }, at: new Date().toISOString() };
  const dir = join(repo, "bench", "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "campaign.json"), JSON.stringify(results, null, 2) + "\n");
  const table = [
    `Run of ${results.at.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} × ${machine.cpu}, Node ${machine.node}, load at start ${machine.loadavg_start}; ${N.toLocaleString("en")} subscribers.`,
    "",
    "| run | recipients | s | recipients/s | CPU s | snapshot s | lost | duplicates | peak RSS MB (all processes) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.run} | ${r.recipients} | ${r.seconds} | ${r.recipients_per_s} | ${r.cpu_s ?? "—"} | ${r.snapshot_s} | ${r.lost} | ${r.duplicates} | ${r.peak_rss_mb} |`),
    ...(side.length === 2
      ? [
          "",
          `Side by side through one SMTP server (${SMTP_N.toLocaleString("en")} subscribers, the same template; ratio = emailsvc recipients/s ÷ listmonk's):`,
          "",
          "| run | recipients | s | recipients/s | lost | duplicates | peak RSS MB |",
          "|---|---:|---:|---:|---:|---:|---:|",
          ...side.map((r) => `| ${r.run} | ${r.recipients} | ${r.seconds} | ${r.recipients_per_s} | ${r.lost} | ${r.duplicates} | ${r.peak_rss_mb} |`),
          "",
          `Ratio: ${(side[0]!.recipients_per_s / side[1]!.recipients_per_s).toFixed(2)}.`,
        ]
      : []),
  ].join("\n");
  writeResultsBlock(join(repo, "bench", "README.md"), "campaign", "Campaign fan-out", table);
  console.log(table);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
